/* account.h: counting open FDs, so that a scenario that leaks one fails and
 * names it. */
#ifndef GPUIPC_ACCOUNT_H
#define GPUIPC_ACCOUNT_H

#include <stddef.h>

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

/* Frees the snapshot's storage. */
void gpuipc_account_free(gpuipc_fds *s);

#endif
