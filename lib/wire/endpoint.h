/* SPDX-License-Identifier: Apache-2.0 */
/* endpoint.h: the Unix SOCK_SEQPACKET socket of the two-terminal mode.
 * --serve listens on it and accepts one consumer; --connect connects to it.
 * Both wait under a deadline, and both admit only a peer of their own uid
 * (or of --allow-uid), as SO_PEERCRED reports it.
 *
 * A path is a file in the filesystem, or "@name" for the abstract namespace
 * (no file; scoped to the network namespace). For a file:
 *   - its directory must not be writable by anyone but its owner, and the
 *     owner must be this user or root: otherwise another user could replace
 *     the socket;
 *   - an existing path that is not a socket is never removed: an error;
 *   - an existing socket that refuses connections (ECONNREFUSED) is stale
 *     and is replaced; one that accepts them belongs to a live server: an
 *     error;
 *   - the socket is created with mode 0600. */
#ifndef GPUIPC_ENDPOINT_H
#define GPUIPC_ENDPOINT_H

#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

typedef struct gpuipc_endpoint {
    int fd;              /* the listening socket, or -1 */
    int file;            /* 1 if path names a file that close() removes */
    char path[108];
    /* The socket file this process bound: its directory (held open, so
     * that a directory swapped in under the same name is not touched), its
     * name there, and its identity. Only that file is ever removed. */
    int dirfd;
    char base[108];
    dev_t dev;
    ino_t ino;
} gpuipc_endpoint;

/* The peer admitted on a connection. */
typedef struct gpuipc_peer {
    pid_t pid; /* as this process's pid namespace sees it; 0 if not visible */
    uid_t uid;
} gpuipc_peer;

/* Called for each connection refused because of its uid; why says whose,
 * in no mode's words (the caller adds what its mode offers: --serve names
 * --allow-uid), and peer is who it was. */
typedef void (*gpuipc_endpoint_refused_fn)(const char *why, const gpuipc_peer *peer, void *arg);

/* Checks path under the rules above without creating anything (a stale
 * socket stays until listen replaces it), so that a refused path is said
 * before slower checks. Returns 0, or a negative errno with err naming the
 * rule or the call that failed. */
int gpuipc_endpoint_check(const char *path, gpuipc_err *err);

/* Creates the listening socket at path under the rules above. Returns 0, or
 * a negative errno with err naming the rule or the call that failed. */
int gpuipc_endpoint_listen(gpuipc_endpoint *ep, const char *path, gpuipc_err *err);

/* Waits until deadline_ns for a consumer whose uid is this process's or
 * allow_uid (-1: none), refusing (closing) others after telling refused.
 * Returns the connected socket (close-on-exec), or -ETIMEDOUT, -EINTR (a
 * stop signal, gpuipc_stop_signal) or another negative errno, with err. */
int gpuipc_endpoint_accept(gpuipc_endpoint *ep, long allow_uid, uint64_t deadline_ns,
                           gpuipc_endpoint_refused_fn refused, void *arg, gpuipc_peer *peer,
                           gpuipc_err *err);

/* Closes the listening socket and removes its file, if it made one. Safe to
 * call twice. */
void gpuipc_endpoint_close(gpuipc_endpoint *ep);

/* Removes the socket file ep bound, if it is still that file (by device
 * and inode, in the directory it was bound in): never a file put there
 * since, nor another server's socket. Async-signal-safe. Returns 1 if it
 * removed it, else 0. */
int gpuipc_endpoint_unlink(const gpuipc_endpoint *ep);

/* Connects to the server at path, retrying until deadline_ns while nothing
 * listens there yet, and admits it only if its uid is this process's or
 * allow_uid. Returns the connected socket, or a negative errno with err:
 * -EPERM for a server of another uid (in *peer), which err names in no
 * mode's words. */
int gpuipc_endpoint_connect(const char *path, long allow_uid, uint64_t deadline_ns,
                            gpuipc_peer *peer, gpuipc_err *err);

#endif
