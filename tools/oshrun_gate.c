/* oshrun's gate in front of its PMIx server.
 *
 * PMIx 4.2 reaches its clients over TCP on 127.0.0.1, where every local user
 * can connect. Over TCP its native security believes the uid a client
 * claims, and it reads a new connection's first message with blocking reads
 * on its progress thread, so a peer that connects and stays silent stalls
 * every PE of the job. The server module's listener hook, which would let
 * oshrun accept connections itself, is not used by PMIx 4.x: the library
 * calls accept() from its own listener thread. So oshrun defines accept and
 * accept4, to which the dynamic linker binds the library's calls (the
 * executable comes first in symbol lookup), and returns only connections
 * whose other end the kernel says belongs to oshrun's own user: the uid that
 * created a socket, which a client cannot claim otherwise. Processes of that
 * user are trusted, as the kernel trusts them (they may signal or trace
 * oshrun anyway); any other connection is closed before PMIx reads a byte of
 * it, and accept reports ECONNABORTED, which every PMIx version takes as
 * "try the next one". */
#include "oshrun_gate.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

static uid_t gate_uid;
static bool gate_uid_set, gate_debug;
static atomic_ulong gate_admitted, gate_refused;

void oshrun_gate_init(uid_t uid, bool debug)
{
    gate_uid = uid;
    gate_uid_set = true;
    gate_debug = debug;
}

unsigned long oshrun_gate_admitted(void)
{
    return atomic_load(&gate_admitted);
}

unsigned long oshrun_gate_refused(void)
{
    return atomic_load(&gate_refused);
}

static size_t addr_of(const struct sockaddr_storage *ss, const void **addr_p, unsigned *port_p)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        *addr_p = &in->sin_addr;
        *port_p = ntohs(in->sin_port);
        return 4;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        *addr_p = &in6->sin6_addr;
        *port_p = ntohs(in6->sin6_port);
        return 16;
    }
    return 0;
}

/* Asks the kernel (sock_diag) for the one TCP socket whose local end is
 * `peer` and whose remote end is `self`: the client's. 0 and its uid, or
 * -1 when the question cannot be answered (no such socket, or no
 * sock_diag support for TCP). */
static int owner_by_diag(const struct sockaddr_storage *peer, const struct sockaddr_storage *self,
                         uid_t *uid_p)
{
    const void *paddr, *saddr;
    unsigned pport, sport;
    size_t len = addr_of(peer, &paddr, &pport);
    if (len == 0 || addr_of(self, &saddr, &sport) != len)
        return -1;
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } msg;
    memset(&msg, 0, sizeof(msg));
    msg.nlh.nlmsg_len = sizeof(msg);
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST;
    msg.req.sdiag_family = (uint8_t)peer->ss_family;
    msg.req.sdiag_protocol = IPPROTO_TCP;
    msg.req.idiag_states = ~0u;
    msg.req.id.idiag_sport = htons((uint16_t)pport);
    msg.req.id.idiag_dport = htons((uint16_t)sport);
    memcpy(msg.req.id.idiag_src, paddr, len);
    memcpy(msg.req.id.idiag_dst, saddr, len);
    msg.req.id.idiag_cookie[0] = msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -1;
    int rc = -1;
    struct timeval limit = {.tv_sec = 1};
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    _Alignas(struct nlmsghdr) char buf[4096];
    ssize_t n;
    if (setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit)) == 0 &&
        sendto(nl, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel, sizeof(kernel)) ==
            (ssize_t)sizeof(msg) &&
        (n = recv(nl, buf, sizeof(buf), 0)) > 0) {
        const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
        if (NLMSG_OK(h, (size_t)n) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
            h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            *uid_p = m->idiag_uid;
            rc = 0;
        }
    }
    close(nl);
    return rc;
}

/* "0100007F:D431", as /proc/net/tcp prints an endpoint: each 32-bit word of
 * the address in hex as the kernel holds it (network order read as a host
 * integer), then the port. Returns the address length, 0 if malformed. */
static size_t parse_endpoint(const char *s, unsigned char addr[16], unsigned *port_p)
{
    const char *colon = strchr(s, ':');
    size_t hexlen = colon != NULL ? (size_t)(colon - s) : 0;
    if (hexlen != 8 && hexlen != 32)
        return 0;
    for (size_t w = 0; w < hexlen / 8; w++) {
        char hex[9], *end;
        memcpy(hex, s + 8 * w, 8);
        hex[8] = '\0';
        uint32_t v = (uint32_t)strtoul(hex, &end, 16);
        if (*end != '\0')
            return 0;
        memcpy(addr + 4 * w, &v, sizeof(v));
    }
    char *end;
    unsigned long port = strtoul(colon + 1, &end, 16);
    if (end == colon + 1 || port > 0xffff)
        return 0;
    *port_p = (unsigned)port;
    return hexlen / 2;
}

static bool same_endpoint(const struct sockaddr_storage *ss, const unsigned char *addr,
                          size_t len, unsigned port)
{
    const void *a;
    unsigned p;
    return addr_of(ss, &a, &p) == len && p == port && memcmp(a, addr, len) == 0;
}

/* The same question answered from /proc/self/net/tcp{,6}, which lists every
 * socket with its uid: for kernels without sock_diag for TCP. */
static int owner_by_proc(const struct sockaddr_storage *peer, const struct sockaddr_storage *self,
                         uid_t *uid_p)
{
    FILE *f = fopen(peer->ss_family == AF_INET ? "/proc/self/net/tcp" : "/proc/self/net/tcp6",
                    "re");
    if (f == NULL)
        return -1;
    int rc = -1;
    char *line = NULL;
    size_t cap = 0;
    while (rc != 0 && getline(&line, &cap, f) > 0) {
        char local[64], remote[64];
        unsigned long uid;
        unsigned char laddr[16], raddr[16];
        unsigned lport, rport;
        /* sl local remote st queues timer retransmits uid ...; the header
         * does not match */
        if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %lu", local, remote, &uid) != 3)
            continue;
        size_t llen = parse_endpoint(local, laddr, &lport);
        size_t rlen = parse_endpoint(remote, raddr, &rport);
        if (llen != 0 && rlen != 0 && same_endpoint(peer, laddr, llen, lport) &&
            same_endpoint(self, raddr, rlen, rport)) {
            *uid_p = (uid_t)uid;
            rc = 0;
        }
    }
    free(line);
    fclose(f);
    return rc;
}

/* Who is at the other end of accepted connection s: 0 and the uid, or -1
 * when nobody can tell (the peer is gone, or not a local socket). */
static int peer_owner(int s, const struct sockaddr_storage *peer, uid_t *uid_p)
{
    if (peer->ss_family == AF_UNIX) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
            return -1;
        *uid_p = cred.uid;
        return 0;
    }
    struct sockaddr_storage self;
    socklen_t len = sizeof(self);
    if (getsockname(s, (struct sockaddr *)&self, &len) != 0 || self.ss_family != peer->ss_family)
        return -1;
    if (owner_by_diag(peer, &self, uid_p) == 0)
        return 0;
    return owner_by_proc(peer, &self, uid_p);
}

static bool admit(int s, const struct sockaddr_storage *peer)
{
    uid_t want = gate_uid_set ? gate_uid : geteuid();
    uid_t uid = 0;
    bool known = peer_owner(s, peer, &uid) == 0;
    if (known && uid == want) {
        atomic_fetch_add(&gate_admitted, 1);
        return true;
    }
    if (atomic_fetch_add(&gate_refused, 1) == 0 || gate_debug) {
        if (known)
            fprintf(stderr, "oshrun: refused a connection to the PMIx server from uid %lu; only "
                            "uid %lu, which runs this job, may connect\n",
                    (unsigned long)uid, (unsigned long)want);
        else
            fprintf(stderr, "oshrun: refused a connection to the PMIx server whose owner cannot "
                            "be told (it closed at once, or is not on this machine)\n");
    }
    return false;
}

__attribute__((visibility("default"))) int accept4(int fd, __SOCKADDR_ARG addr,
                                                   socklen_t *restrict addr_len, int flags)
{
    struct sockaddr_storage peer;
    socklen_t len = sizeof(peer);
    int s = (int)syscall(SYS_accept4, fd, &peer, &len, flags);
    if (s < 0)
        return -1;
    if (!admit(s, &peer)) {
        close(s);
        errno = ECONNABORTED;
        return -1;
    }
    if (addr.__sockaddr__ != NULL && addr_len != NULL) {
        memcpy(addr.__sockaddr__, &peer, len < *addr_len ? len : *addr_len);
        *addr_len = len;
    }
    return s;
}

__attribute__((visibility("default"))) int accept(int fd, __SOCKADDR_ARG addr,
                                                  socklen_t *restrict addr_len)
{
    return accept4(fd, addr, addr_len, 0);
}
