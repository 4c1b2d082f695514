/* SPDX-License-Identifier: Apache-2.0 */
/* inject.h: test-only hooks that make a role misbehave on purpose, read from
 * the environment and inert unless set:
 *   GPUIPC_FAULT=<role>:<step>:<action>   action: exit, kill, hang, corrupt,
 *                                          extra-fds, close or wedge
 *   GPUIPC_SABOTAGE=<role>:<what>         what: wrong-seed, skip-write, leak,
 *                                          chunk-order, leak-fd, read-nothing,
 *                                          read-partial, flip-one, flip-last,
 *                                          flip-past-4g, offer-memfd, offer-pipe
 *                                          offer-size, not-dumpable, early-event
 *                                          or wrong-token
 * They exist so that tests can prove the survivor reports a dead or stuck
 * peer, that verification fails when the bytes are wrong or were not all
 * read, that an importer survives an offer of the wrong kind, and that the
 * accounting fails a scenario that leaks. */
#ifndef GPUIPC_INJECT_H
#define GPUIPC_INJECT_H

#include <stdint.h>

#include "core/err.h"

enum gpuipc_fault_action {
    GPUIPC_FAULT_NONE = 0,
    GPUIPC_FAULT_EXIT, /* _exit(1) without cleanup */
    GPUIPC_FAULT_KILL, /* SIGKILL itself */
    GPUIPC_FAULT_HANG, /* sleep until killed */
    GPUIPC_FAULT_CORRUPT,   /* send a corrupt frame (bad magic), then carry on */
    GPUIPC_FAULT_EXTRA_FDS, /* send a HELLO with 2 FDs it may not carry, then carry on */
    GPUIPC_FAULT_CLOSE,     /* shut the connection down (both ways), then carry on */
    GPUIPC_FAULT_WEDGE,     /* stick as a wedged driver call does: at the step's first
                             * driver call, or at its end if it makes none, block every
                             * signal and sleep for ever (core/watch.h): only SIGKILL
                             * ends it, and only the run's deadline finds it */
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
                                  * end-of-session check must find */
    GPUIPC_SABOTAGE_READ_NOTHING, /* the role's check of the other's bytes reads
                                   * nothing but reports every word read and none
                                   * bad, and skips its own comparison */
    GPUIPC_SABOTAGE_READ_PARTIAL, /* it reads only the first 2 words, and skips its
                                   * own comparison */
    GPUIPC_SABOTAGE_FLIP_ONE,    /* after its fill, one bit of one word (a third of
                                  * the way in) is wrong */
    GPUIPC_SABOTAGE_FLIP_LAST,   /* the same for the last word */
    GPUIPC_SABOTAGE_FLIP_PAST_4G, /* the same for the word after byte 4 GiB (the
                                   * buffer must be larger) */
    GPUIPC_SABOTAGE_OFFER_MEMFD, /* producer: every FD the offer hands over is an
                                  * unsealed memfd instead (one is added where none
                                  * travels) */
    GPUIPC_SABOTAGE_OFFER_PIPE,  /* the same with the read end of a pipe */
    GPUIPC_SABOTAGE_OFFER_SIZE,  /* producer: the offer claims twice the size */
    GPUIPC_SABOTAGE_NOT_DUMPABLE, /* the role makes itself not dumpable (PR_SET_DUMPABLE 0)
                                   * before HELLO: pidfd_getfd from it then needs
                                   * CAP_SYS_PTRACE */
    GPUIPC_SABOTAGE_EARLY_EVENT, /* producer, ipc-event: the event is recorded before a
                                  * deliberately slow fill instead of after it */
    GPUIPC_SABOTAGE_WRONG_TOKEN, /* --ranks: the role's proof at HELLO is made with a
                                  * token one digit off its job's: what the other rank
                                  * must refuse */
    /* consumer, the VMM mechanisms' import: the driver's answer replaced,
     * without the call, by what multi-node NVLink racks answer (issue 40),
     * so that the whole path to the cause is seen on one machine */
    GPUIPC_SABOTAGE_IMPORT_INVALID_HANDLE, /* cuMemImportFromShareableHandle:
                                            * CUDA_ERROR_INVALID_HANDLE */
    GPUIPC_SABOTAGE_ACCESS_INVALID_VALUE,  /* the import's cuMemSetAccess:
                                            * CUDA_ERROR_INVALID_VALUE */
    GPUIPC_SABOTAGE_ACCESS_NOT_SUPPORTED,  /* the import's cuMemSetAccess:
                                            * CUDA_ERROR_NOT_SUPPORTED */
    GPUIPC_SABOTAGE_COUNT
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

/* With a flip sabotage armed for role, finds the word to spoil in a buffer
 * of nwords words whose first has pattern index first: stores its index in
 * *index and returns 1; returns 0 if none is armed, or -ERANGE if the buffer
 * has no such word (flip-past-4g on 4 GiB or less). */
int gpuipc_inject_flip(const gpuipc_inject *in, int role, uint64_t nwords, uint64_t first,
                       uint64_t *index);

/* With offer-memfd or offer-pipe armed for role, puts an FD of that kind in
 * place of fd (the number stays, so the caller's bookkeeping holds): returns
 * 1. Returns 0 if neither is armed, or a negative errno if the replacement
 * could not be made. */
int gpuipc_inject_wrong_fd(const gpuipc_inject *in, int role, int fd);

/* Returns "exit", "kill", "hang", "corrupt", "extra-fds" or "close". */
const char *gpuipc_inject_action_name(int action);

#endif
