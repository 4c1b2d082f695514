/* SPDX-License-Identifier: Apache-2.0 */
/* wire.h: one end of a connection between producer and consumer: the
 * messages of msg.h sent and received under deadlines, over a SOCK_SEQPACKET
 * socket (one frame a datagram, with FDs as SCM_RIGHTS) or over a stream
 * such as TCP between nodes (each frame after its 4-byte little-endian
 * length, and no FDs). */
#ifndef GPUIPC_WIRE_H
#define GPUIPC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "wire/msg.h"

/* One end of a connection: the socket, both sequence counters, and the
 * reason it became unusable, if it did. */
typedef struct gpuipc_wire gpuipc_wire;

/* Wraps the connected socket fd, whose peer is called peer ("consumer",
 * "producer") in messages. A SOCK_STREAM socket (SO_TYPE) makes a stream
 * wire, which frames each message with its length; any other fd is taken
 * as a SOCK_SEQPACKET socket. On success the wire owns fd. Returns 0 or
 * -ENOMEM. */
int gpuipc_wire_open(gpuipc_wire **out, int fd, const char *peer, gpuipc_err *err);

/* Test-only: what a lying peer does to each message it sends (a copy: the
 * caller's msg stays as it was). See gpuipc_wire_set_tamper. */
typedef void (*gpuipc_wire_tamper_fn)(gpuipc_msg *msg, void *arg);

/* Test-only: makes w a liar. Every later gpuipc_wire_send encodes what fn
 * (NULL: nothing) makes of a copy of its message, so that the tests can
 * build a peer that runs the real role but says what they choose, and hold
 * the real program against it: the type and every field, and fewer FDs (the
 * first lie.nfds of the caller's; never more). The program never calls
 * this. */
void gpuipc_wire_set_tamper(gpuipc_wire *w, gpuipc_wire_tamper_fn fn, void *arg);

/* Seals w from its next frame on, both ways (a --ranks session, from AUTH):
 * each frame sent carries, after its bytes, the first GPUIPC_WIRE_SEAL_LEN
 * bytes of HMAC-SHA256(key, my_role || the frame || each FD's device and
 * inode), and each frame received must carry the same under peer_role, or
 * it is refused (-EBADMSG, named: altered on the way, its FDs swapped, or
 * not from the process that proved the job's token) and the connection is
 * unusable; so is a frame not all of whose FDs arrived (MSG_CTRUNC). With the frames' sequence numbers, a
 * frame replayed, reordered or reflected back to its sender is refused too.
 * key is copied. */
void gpuipc_wire_seal(gpuipc_wire *w, const uint8_t key[GPUIPC_WIRE_KEY_LEN], int my_role,
                      int peer_role);

/* Whether w is sealed. */
int gpuipc_wire_sealed(const gpuipc_wire *w);

/* Whether w frames on a stream (its socket is SOCK_STREAM): 1 or 0. */
int gpuipc_wire_stream(const gpuipc_wire *w);

/* Closes the socket and frees w. NULL is allowed. */
void gpuipc_wire_close(gpuipc_wire *w);

/* Returns the socket. The wire still owns it. */
int gpuipc_wire_fd(const gpuipc_wire *w);

/* Returns why the wire became unusable, or NULL while it is healthy. After a
 * timeout, a lost peer or a malformed message every later call fails at once
 * with this reason. */
const char *gpuipc_wire_broken(const gpuipc_wire *w);

/* Sends msg with the msg->nfds FDs in fds, waiting for buffer space until
 * deadline_ns. Writes use MSG_NOSIGNAL. The FDs stay the caller's. On a
 * stream the frame goes after its length, in as many writes as it takes (a
 * deadline part-way breaks the wire), and a message with FDs is refused
 * before anything is sent (-EINVAL; the wire stays usable). Returns 0;
 * -EPIPE if the peer is gone ("peer gone during <step>"), -ETIMEDOUT, or
 * another negative errno. */
int gpuipc_wire_send(gpuipc_wire *w, gpuipc_msg *msg, const int *fds, uint64_t deadline_ns,
                     unsigned step, gpuipc_err *err);

/* Receives one message of a type in accept, waiting until deadline_ns. On
 * success the msg->nfds FDs in fds (room for GPUIPC_WIRE_MAX_FDS) belong to
 * the caller; on failure every FD that arrived has been closed. On a stream
 * it reads the length, then exactly the frame it announces (never into the
 * next), under the one deadline; a length outside GPUIPC_WIRE_HEADER_LEN to
 * GPUIPC_WIRE_MAX_MSG is -EPROTO, an EOF inside a frame -EPIPE, and the frame
 * is checked as gpuipc_wire_take checks one without control data. Returns 0;
 * -EPIPE (peer gone), -ETIMEDOUT, -EPROTO (malformed, rejected with the
 * reason) or another negative errno.
 *
 * -EMFILE is the one failure that leaves the wire usable: the message was
 * sound, but the kernel could not hand over all its FDs (MSG_CTRUNC, most
 * often because this process reached RLIMIT_NOFILE). msg is then decoded,
 * msg->nfds is the count that was sent, every entry of fds is -1 (those that
 * arrived were closed), and err gives both numbers: what was sent and what
 * the limit let through. */
int gpuipc_wire_recv(gpuipc_wire *w, unsigned accept, gpuipc_msg *msg, int *fds,
                     uint64_t deadline_ns, unsigned step, gpuipc_err *err);

/* The second half of gpuipc_wire_recv, for the fuzzer and the tests: takes
 * the n bytes in buf that recvmsg() returned in mh (its control data and
 * msg_flags), with the poll revents that preceded it, and validates them as
 * gpuipc_wire_recv does. The FDs in mh's SCM_RIGHTS headers belong to the
 * call: on success they are in fds, on failure closed. */
struct msghdr;
int gpuipc_wire_take(gpuipc_wire *w, const uint8_t *buf, size_t n, struct msghdr *mh,
                     short revents, unsigned accept, gpuipc_msg *msg, int *fds, unsigned step,
                     gpuipc_err *err);

/* Test-only faults (GPUIPC_FAULT): what gpuipc_wire_send_fault sends. */
enum gpuipc_wire_fault {
    GPUIPC_WIRE_FAULT_CORRUPT = 1, /* a HELLO frame with its magic bits flipped */
    GPUIPC_WIRE_FAULT_EXTRA_FDS,   /* a HELLO carrying 2 FDs (of /dev/null), which
                                    * HELLO may not carry */
};

/* Sends the fault frame kind as the next message, so that the peer must
 * reject it. On a stream EXTRA_FDS is refused as gpuipc_wire_send refuses
 * FDs (-EINVAL). Returns 0 or a negative errno, like gpuipc_wire_send. */
int gpuipc_wire_send_fault(gpuipc_wire *w, int kind, uint64_t deadline_ns, unsigned step,
                           gpuipc_err *err);

/* Closes n FDs of fds, ignoring -1 entries. */
void gpuipc_wire_close_fds(int *fds, unsigned n);

#endif
