/* SPDX-License-Identifier: Apache-2.0 */
/* tcp.h: the TCP socket a rank listens on for ranks of other nodes
 * (launch/meet.h): which address it listens on, that address as the text
 * of its card, and connect and accept under deadlines.
 *
 * The address: where net names an interface ("ib0", "eth0") or a CIDR
 * ("10.1.0.0/16", "fd00::/8"), the first address that is up and matches
 * (IPv4 before IPv6; a link-local one never, fe80::/10 or 169.254.0.0/16,
 * since another node would need its scope or could not route it); else the
 * first address the host name resolves to that is this machine's and not
 * loopback; else, where it resolves to loopback alone (Debian maps it to
 * 127.0.1.1), the first address of an interface that is up and is neither
 * loopback nor link-local. A loopback address is taken only where net names
 * it (the interface "lo", or a CIDR within loopback): another node that
 * dialled it would reach itself. */
#ifndef GPUIPC_WIRE_TCP_H
#define GPUIPC_WIRE_TCP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/err.h"

#define GPUIPC_TCP_TEXT_LEN 64 /* "[<IPv6 address>]:<port>", with the NUL */

/* An address and port. */
typedef struct gpuipc_tcp_addr {
    struct sockaddr_storage ss;
    socklen_t len;
} gpuipc_tcp_addr;

/* Chooses the address to listen on by the rules above (net NULL or "":
 * no choice made), its port 0, with one sentence into how (hlen bytes)
 * saying which rule chose it. Returns 0, or -EINVAL (net is neither an
 * interface's name nor a CIDR) or -ENOENT (nothing matches), with err. */
int gpuipc_tcp_choose(const char *net, gpuipc_tcp_addr *a, char *how, size_t hlen,
                      gpuipc_err *err);

/* Whether a is an address of an interface of this machine that is up
 * (loopback never counts). Returns 1 or 0. */
int gpuipc_tcp_is_mine(const gpuipc_tcp_addr *a);

/* Whether net is an interface's name or a CIDR, as gpuipc_tcp_choose takes
 * it (without looking for it). Returns 0, or -EINVAL with err. */
int gpuipc_tcp_net_check(const char *net, gpuipc_err *err);

/* a as text: "192.0.2.2:41234", "[fd00::2]:41234". */
void gpuipc_tcp_text(const gpuipc_tcp_addr *a, char *buf, size_t len);

/* Parses text as gpuipc_tcp_text writes it, strictly (a port of 1 to
 * 65535). Returns 0, or -EINVAL. */
int gpuipc_tcp_parse(const char *text, gpuipc_tcp_addr *a);

/* Listens on a (port 0: one the kernel picks), non-blocking and
 * close-on-exec; *a gets the port. Returns the socket, or a negative errno
 * with err. */
int gpuipc_tcp_listen(gpuipc_tcp_addr *a, gpuipc_err *err);

/* Takes one connection waiting at the listener lfd, without waiting:
 * close-on-exec, blocking, TCP_NODELAY, and who came as text into from
 * (flen bytes). Returns the socket, -EAGAIN where none waits, or another
 * negative errno. */
int gpuipc_tcp_accept(int lfd, char *from, size_t flen);

/* Connects to a, until deadline_ns (and a stop signal). The socket is
 * close-on-exec, blocking and TCP_NODELAY. Returns it, or -ECONNREFUSED
 * (nothing listens there, or a firewall rejects), -ETIMEDOUT, -EINTR (a
 * stop) or another negative errno, with err naming the call. */
int gpuipc_tcp_connect(const gpuipc_tcp_addr *a, uint64_t deadline_ns, gpuipc_err *err);

/* Reads exactly len bytes from the stream fd into buf, until deadline_ns
 * (and a stop signal), never more. Returns 0; -EPIPE where the peer closed
 * first (*got says how many bytes came), -ETIMEDOUT, -EINTR, or another
 * negative errno. */
int gpuipc_tcp_read_exact(int fd, void *buf, size_t len, uint64_t deadline_ns, size_t *got);

#endif
