/* account.h: counting open FDs, so that a scenario that leaks one fails and
 * names it. */
#ifndef GPUIPC_ACCOUNT_H
#define GPUIPC_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The FDs open in this process at one moment, in ascending order. */
typedef struct gpuipc_fds {
    int *fd;
    size_t n;
} gpuipc_fds;

/* Lists /proc/self/fd into s (leaving out the directory's own FD). Returns
 * 0, or a negative errno with the reason; s is then empty. */
int gpuipc_account_snapshot(gpuipc_fds *s, gpuipc_err *err);

/* Compares now with an earlier snapshot before. Returns the number of FDs
 * open now that were not open before; if there are any, err describes them,
 * e.g. "2 FDs leaked: fd 7 (/dev/nvidia0), fd 9 (/memfd:x (deleted))". */
size_t gpuipc_account_leaks(const gpuipc_fds *before, const gpuipc_fds *now, gpuipc_err *err);

/* Snapshots the FDs open now and compares them with before, as
 * gpuipc_account_leaks does. Returns the count of new FDs (named in err),
 * or 0 if the snapshot itself failed. */
size_t gpuipc_account_leaks_now(const gpuipc_fds *before, gpuipc_err *err);

/* Counts the FD numbers below limit (at most the first 2^20) that are not
 * open in this process, stopping once want are found: what a receive of
 * SCM_RIGHTS FDs, or a batch of new FDs, has room for under RLIMIT_NOFILE. */
unsigned gpuipc_account_free_below(uint64_t limit, unsigned want);

/* Frees the snapshot's storage. */
void gpuipc_account_free(gpuipc_fds *s);

#endif
