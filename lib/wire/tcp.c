/* SPDX-License-Identifier: Apache-2.0 */
/* tcp.c: a rank's TCP listener for ranks of other nodes: its address
 * (tcp.h's rules), listen, accept and connect under deadlines, and reads
 * of exactly so many bytes. */
#include "wire/tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/stop.h"
#include "core/watch.h"

/* ---- the address ------------------------------------------------------------------- */

/* A CIDR as parsed: family, its bytes and prefix length. */
typedef struct cidr {
    int family;
    uint8_t bytes[16];
    unsigned bits;
} cidr;

static int parse_cidr(const char *text, cidr *c)
{
    char addr[INET6_ADDRSTRLEN + 1], *end;
    const char *slash = strchr(text, '/');
    unsigned long bits;
    size_t n;

    if (slash == NULL || (n = (size_t)(slash - text)) == 0 || n >= sizeof(addr) ||
        slash[1] < '0' || slash[1] > '9')
        return -1;
    memcpy(addr, text, n);
    addr[n] = '\0';
    errno = 0;
    bits = strtoul(slash + 1, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    if (inet_pton(AF_INET, addr, c->bytes) == 1)
        c->family = AF_INET;
    else if (inet_pton(AF_INET6, addr, c->bytes) == 1)
        c->family = AF_INET6;
    else
        return -1;
    if (bits > (c->family == AF_INET ? 32u : 128u))
        return -1;
    c->bits = (unsigned)bits;
    return 0;
}

/* The address bytes of sa (4 or 16), or NULL for another family. */
static const uint8_t *bytes_of(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    if (sa->sa_family == AF_INET6)
        return (const uint8_t *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    return NULL;
}

static int in_cidr(const struct sockaddr *sa, const cidr *c)
{
    const uint8_t *b = bytes_of(sa);
    unsigned full = c->bits / 8, rest = c->bits % 8;

    if (b == NULL || sa->sa_family != c->family || memcmp(b, c->bytes, full) != 0)
        return 0;
    return rest == 0 || ((b[full] ^ c->bytes[full]) & (0xffu << (8 - rest)) & 0xffu) == 0;
}

static int is_loopback(const struct sockaddr *sa)
{
    static const uint8_t v6_loop[16] = {[15] = 1};
    static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
    const uint8_t *b = bytes_of(sa);

    if (sa->sa_family == AF_INET)
        return b[0] == 127;
    return memcmp(b, v6_loop, 16) == 0 || (memcmp(b, mapped, 12) == 0 && b[12] == 127);
}

/* Link-local: fe80::/10, and 169.254.0.0/16. */
static int is_link_local(const struct sockaddr *sa)
{
    const uint8_t *b = bytes_of(sa);

    if (sa->sa_family == AF_INET)
        return b[0] == 169 && b[1] == 254;
    return b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
}

static void take(gpuipc_tcp_addr *a, const struct sockaddr *sa)
{
    memset(a, 0, sizeof(*a));
    a->len = sa->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                      : sizeof(struct sockaddr_in6);
    memcpy(&a->ss, sa, a->len);
    if (sa->sa_family == AF_INET)
        ((struct sockaddr_in *)(void *)&a->ss)->sin_port = 0;
    else
        ((struct sockaddr_in6 *)(void *)&a->ss)->sin6_port = 0;
}

static void addr_only(const struct sockaddr *sa, char *buf, size_t len)
{
    if (inet_ntop(sa->sa_family, bytes_of(sa), buf, (socklen_t)len) == NULL)
        snprintf(buf, len, "?");
}

/* Whether c lies within loopback (127.0.0.0/8 or ::1/128): only such a CIDR
 * chooses a loopback address (0.0.0.0/0 does not). */
static int cidr_loopback(const cidr *c)
{
    static const uint8_t v6_loop[16] = {[15] = 1};

    return c->family == AF_INET ? c->bits >= 8 && c->bytes[0] == 127
                                : c->bits == 128 && memcmp(c->bytes, v6_loop, 16) == 0;
}

/* What an interface's address must be to be chosen. */
enum { BY_NAME, BY_CIDR, BY_ANY };

/* The first address of an up interface that passes (IPv4 first, then
 * IPv6; never link-local; loopback only by name or CIDR), from ifs. */
static const struct ifaddrs *first_match(const struct ifaddrs *ifs, int by, const char *name,
                                         const cidr *c)
{
    const struct ifaddrs *i;
    int pass;

    for (pass = 0; pass < 2; pass++)
        for (i = ifs; i != NULL; i = i->ifa_next) {
            const struct sockaddr *sa = i->ifa_addr;

            if (sa == NULL || sa->sa_family != (pass == 0 ? AF_INET : AF_INET6) ||
                !(i->ifa_flags & IFF_UP) || is_link_local(sa))
                continue;
            if ((by == BY_NAME && strcmp(i->ifa_name, name) == 0) ||
                (by == BY_CIDR && in_cidr(sa, c) && (!is_loopback(sa) || cidr_loopback(c))) ||
                (by == BY_ANY && !is_loopback(sa) && !(i->ifa_flags & IFF_LOOPBACK)))
                return i;
        }
    return NULL;
}

/* Whether sa is an address of an up interface of ifs. */
static int is_mine(const struct ifaddrs *ifs, const struct sockaddr *sa)
{
    const struct ifaddrs *i;
    size_t n = sa->sa_family == AF_INET ? 4 : 16;

    for (i = ifs; i != NULL; i = i->ifa_next)
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == sa->sa_family &&
            (i->ifa_flags & IFF_UP) && memcmp(bytes_of(i->ifa_addr), bytes_of(sa), n) == 0)
            return 1;
    return 0;
}

int gpuipc_tcp_is_mine(const gpuipc_tcp_addr *a)
{
    struct ifaddrs *ifs = NULL;
    int mine;

    if (is_loopback((const struct sockaddr *)&a->ss) || getifaddrs(&ifs) < 0)
        return 0;
    mine = is_mine(ifs, (const struct sockaddr *)&a->ss);
    freeifaddrs(ifs);
    return mine;
}

/* The first address host resolves to that is this machine's, up, and
 * neither loopback nor link-local, into a; else 0, with what it resolved
 * to in seen. */
static int by_host_name(const struct ifaddrs *ifs, const char *host, gpuipc_tcp_addr *a,
                        char *seen, size_t slen)
{
    struct addrinfo hints, *res = NULL, *r;
    int found = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(seen, slen, "nothing");
    gpuipc_watch_call("getaddrinfo");
    if (getaddrinfo(host, NULL, &hints, &res) != 0) {
        gpuipc_watch_call(NULL);
        return 0;
    }
    gpuipc_watch_call(NULL);
    for (r = res; r != NULL && !found; r = r->ai_next) {
        if (bytes_of(r->ai_addr) == NULL)
            continue;
        if (r == res)
            addr_only(r->ai_addr, seen, slen);
        if (!is_loopback(r->ai_addr) && !is_link_local(r->ai_addr) && is_mine(ifs, r->ai_addr)) {
            take(a, r->ai_addr);
            found = 1;
        }
    }
    freeaddrinfo(res);
    return found;
}

int gpuipc_tcp_net_check(const char *net, gpuipc_err *err)
{
    cidr c;

    if (net[0] == '\0')
        return gpuipc_err_set(err, -EINVAL, "an empty network: name an interface (ib0) or a "
                              "CIDR (10.1.0.0/16)");
    if (strchr(net, '/') != NULL)
        return parse_cidr(net, &c) < 0
                   ? gpuipc_err_set(err, -EINVAL, "%s is no CIDR (as 10.1.0.0/16 or fd00::/8)",
                                    net)
                   : 0;
    if (strlen(net) >= IF_NAMESIZE || strchr(net, ':') != NULL)
        return gpuipc_err_set(err, -EINVAL, "%s is neither an interface's name (at most %d "
                              "bytes, no ':') nor a CIDR", net, IF_NAMESIZE - 1);
    return 0;
}

int gpuipc_tcp_choose(const char *net, gpuipc_tcp_addr *a, char *how, size_t hlen,
                      gpuipc_err *err)
{
    struct ifaddrs *ifs = NULL;
    const struct ifaddrs *i;
    char host[256], seen[INET6_ADDRSTRLEN + 1], text[INET6_ADDRSTRLEN + 1];
    cidr c;
    int by = BY_ANY, rc = 0;

    memset(a, 0, sizeof(*a));
    if (net != NULL && net[0] != '\0') {
        if (gpuipc_tcp_net_check(net, err) < 0)
            return -EINVAL;
        by = strchr(net, '/') != NULL ? BY_CIDR : BY_NAME;
        if (by == BY_CIDR)
            (void)parse_cidr(net, &c);
    }
    if (getifaddrs(&ifs) < 0)
        return gpuipc_err_sys(err, "getifaddrs", errno, "getifaddrs: %s", strerror(errno));
    if (by == BY_ANY) {
        if (gethostname(host, sizeof(host)) < 0)
            host[0] = '\0';
        host[sizeof(host) - 1] = '\0';
        if (host[0] != '\0' && by_host_name(ifs, host, a, seen, sizeof(seen))) {
            addr_only((const struct sockaddr *)&a->ss, text, sizeof(text));
            snprintf(how, hlen, "%s, an address its host name %s resolves to", text, host);
            goto out;
        }
        if ((i = first_match(ifs, BY_ANY, NULL, NULL)) != NULL) {
            take(a, i->ifa_addr);
            addr_only(i->ifa_addr, text, sizeof(text));
            snprintf(how, hlen, "%s of %s, the first interface that is up with an address "
                     "neither loopback nor link-local (its host name %s resolves to %s)",
                     text, i->ifa_name, host[0] ? host : "(none)", seen);
            goto out;
        }
        rc = gpuipc_err_set(err, -ENOENT, "no address another node could reach: the host "
                            "name %s resolves to %s, and no interface that is up has an "
                            "address other than loopback and link-local (name one with "
                            "--ranks-net or GPUIPC_RANKS_NET)", host, seen);
        goto out;
    }
    if ((i = first_match(ifs, by, net, &c)) == NULL) {
        rc = gpuipc_err_set(err, -ENOENT, "no interface that is up has %s (an address "
                            "that is neither link-local nor IPv6 without its scope): `ip "
                            "-br addr` lists them", by == BY_NAME ? "that name" : "an address "
                            "in that CIDR");
        goto out;
    }
    take(a, i->ifa_addr);
    addr_only(i->ifa_addr, text, sizeof(text));
    snprintf(how, hlen, "%s of %s, chosen by %s", text, i->ifa_name, net);
out:
    freeifaddrs(ifs);
    return rc;
}

/* ---- the address as text ------------------------------------------------------------ */

static unsigned port_of(const gpuipc_tcp_addr *a)
{
    return a->ss.ss_family == AF_INET
               ? ntohs(((const struct sockaddr_in *)(const void *)&a->ss)->sin_port)
               : ntohs(((const struct sockaddr_in6 *)(const void *)&a->ss)->sin6_port);
}

void gpuipc_tcp_text(const gpuipc_tcp_addr *a, char *buf, size_t len)
{
    char text[INET6_ADDRSTRLEN + 1];

    addr_only((const struct sockaddr *)&a->ss, text, sizeof(text));
    snprintf(buf, len, a->ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", text, port_of(a));
}

int gpuipc_tcp_parse(const char *text, gpuipc_tcp_addr *a)
{
    char addr[INET6_ADDRSTRLEN + 1];
    const char *colon, *start = text, *p;
    unsigned long port = 0;
    size_t n;
    int v6 = text[0] == '[';

    memset(a, 0, sizeof(*a));
    if (v6) {
        const char *close = strchr(text, ']');

        if (close == NULL || close[1] != ':')
            return -EINVAL;
        start = text + 1;
        colon = close + 1;
        n = (size_t)(close - start);
    } else {
        if ((colon = strchr(text, ':')) == NULL)
            return -EINVAL;
        n = (size_t)(colon - text);
    }
    if (n == 0 || n >= sizeof(addr))
        return -EINVAL;
    memcpy(addr, start, n);
    addr[n] = '\0';
    /* A port of 1 to 65535, in decimal without sign or leading zeros. */
    if (colon[1] < '1' || colon[1] > '9')
        return -EINVAL;
    for (p = colon + 1; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || (port = port * 10 + (unsigned long)(*p - '0')) > 65535)
            return -EINVAL;
    }
    if (v6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)&a->ss;

        if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
            return -EINVAL;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        a->len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)&a->ss;

        if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
            return -EINVAL;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        a->len = sizeof(*s4);
    }
    return 0;
}

/* ---- sockets ------------------------------------------------------------------------ */

static void no_delay(int fd)
{
    int one = 1;

    /* A frame is sent whole, and each waits for the other side's answer:
     * Nagle's algorithm would hold each back. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int gpuipc_tcp_listen(gpuipc_tcp_addr *a, gpuipc_err *err)
{
    char text[GPUIPC_TCP_TEXT_LEN];
    const char *call;
    int fd, e;

    gpuipc_tcp_text(a, text, sizeof(text));
    fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return gpuipc_err_sys(err, "socket", errno, "socket(TCP): %s", strerror(errno));
    call = bind(fd, (const struct sockaddr *)&a->ss, a->len) < 0 ? "bind"
           : listen(fd, 128) < 0 ? "listen"
           : getsockname(fd, (struct sockaddr *)&a->ss, &a->len) < 0 ? "getsockname" : NULL;
    if (call != NULL) {
        e = errno;
        close(fd);
        return gpuipc_err_sys(err, call, e, "listening on %s: %s: %s", text, call, strerror(e));
    }
    return fd;
}

/* fd blocking again, with TCP_NODELAY. */
static int settle(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        return -errno;
    no_delay(fd);
    return 0;
}

int gpuipc_tcp_accept(int lfd, char *from, size_t flen)
{
    gpuipc_tcp_addr a;
    int fd, e;

    memset(&a, 0, sizeof(a));
    a.len = sizeof(a.ss);
    do
        fd = accept4(lfd, (struct sockaddr *)&a.ss, &a.len, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    if ((e = settle(fd)) < 0) {
        close(fd);
        return e;
    }
    gpuipc_tcp_text(&a, from, flen);
    return fd;
}

int gpuipc_tcp_connect(const gpuipc_tcp_addr *a, uint64_t deadline_ns, gpuipc_err *err)
{
    char text[GPUIPC_TCP_TEXT_LEN];
    socklen_t elen = sizeof(int);
    int fd, e = 0, rc;

    gpuipc_tcp_text(a, text, sizeof(text));
    fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return gpuipc_err_sys(err, "socket", errno, "socket(TCP): %s", strerror(errno));
    if (connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
        if (errno != EINPROGRESS) {
            e = errno;
            goto fail;
        }
        for (;;) {
            struct pollfd p[2] = {{.fd = fd, .events = POLLOUT},
                                  {.fd = gpuipc_stop_fd(), .events = POLLIN}};

            if (gpuipc_stop_signal()) {
                close(fd);
                return gpuipc_err_set(err, -EINTR, "connect to %s: interrupted by a signal",
                                      text);
            }
            gpuipc_watch_call("connect");
            rc = poll(p, p[1].fd >= 0 ? 2 : 1, (int)gpuipc_clock_ms_left(deadline_ns));
            gpuipc_watch_call(NULL);
            if (rc < 0 && errno == EINTR)
                continue;
            if (rc < 0) {
                e = errno;
                goto fail;
            }
            if (rc == 0 || p[0].revents == 0) {
                if (gpuipc_clock_ms_left(deadline_ns) > 0)
                    continue;
                close(fd);
                return gpuipc_err_set(err, -ETIMEDOUT, "connect to %s: no answer before the "
                                      "deadline (a firewall drops it, or that node is down)",
                                      text);
            }
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
                e = errno;
            if (e != 0)
                goto fail;
            break;
        }
    }
    if ((e = -settle(fd)) != 0) {
        close(fd);
        return gpuipc_err_sys(err, "fcntl", e, "connect to %s: fcntl: %s", text, strerror(e));
    }
    return fd;
fail:
    close(fd);
    return gpuipc_err_sys(err, "connect", e, "connect to %s: %s%s", text, strerror(e),
                          e == ECONNREFUSED ? " (nothing listens there: its process has "
                          "ended, or a firewall rejects the port)"
                          : e == EHOSTUNREACH || e == ENETUNREACH ? " (no route: choose "
                          "the network with --ranks-net)" : "");
}

int gpuipc_tcp_read_exact(int fd, void *buf, size_t len, uint64_t deadline_ns, size_t *got)
{
    uint8_t *b = buf;
    size_t have = 0;

    while (have < len) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                              {.fd = gpuipc_stop_fd(), .events = POLLIN}};
        ssize_t n;
        int rc;

        if (gpuipc_stop_signal())
            return -EINTR;
        n = recv(fd, b + have, len - have, MSG_DONTWAIT);
        if (n > 0) {
            have += (size_t)n;
            continue;
        }
        if (n == 0) {
            *got = have;
            return -EPIPE;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            *got = have;
            return errno == ECONNRESET ? -EPIPE : -errno;
        }
        if (gpuipc_clock_ms_left(deadline_ns) == 0) {
            *got = have;
            return -ETIMEDOUT;
        }
        gpuipc_watch_call("poll");
        rc = poll(p, p[1].fd >= 0 ? 2 : 1, (int)gpuipc_clock_ms_left(deadline_ns));
        gpuipc_watch_call(NULL);
        if (rc < 0 && errno != EINTR) {
            *got = have;
            return -errno;
        }
    }
    *got = have;
    return 0;
}
