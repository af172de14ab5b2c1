/* SPDX-License-Identifier: MIT */
/*
 * udp.h -- private to the udp TPI provider (udp.c, udp_data.c, udp_opt.c)
 * and to rawip.c, which is the same provider over raw sockets: the
 * endpoint and its lock legend.  docs/TPI.md "udp" and "rawip" describe
 * them.
 *
 * Locking
 *   ep->lk guards the fields marked LK.  It is a leaf: held only around
 *   field updates, never across putnext/qreply or a socket call.
 * I/O claims
 *   A service procedure (or T_OPTMGMT_REQ) that uses the socket first takes
 *   an I/O claim (udp_io_get: io_users++ under lk, returns fd), makes its
 *   non-blocking socket calls (and its putnext/qreply) without the lock,
 *   and drops the claim when it returns (udp_io_put).  Unbind and
 *   close set fd to -1 (no new claim), wait for io_users to drain, remove
 *   the socket from the epoll thread (ust_iow_del) and only then close it,
 *   so a descriptor number is never used after it was closed.  Claims held
 *   across putnext/qreply are recorded per thread: an unbind that the
 *   perimeter runs inside such a call on the same thread waits only for
 *   the other threads' claims, and leaves the close to the claim below it
 *   (dead_fd); after each putnext/qreply a service procedure checks
 *   udp_io_valid and stops if its socket was taken away.
 */
#ifndef UST_UDP_H
#define UST_UDP_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stream.h>
#include <sys/tihdr.h>

#include "inet_io.h"

#define UDP_OPT_MAX 512 /* OPT_size */
#define UDP_NOPTS 12    /* the options of udp_opt.c */

/* What a device of this driver is: "udp" (udp.c) or "rawip" (rawip.c). */
struct udp_kind {
    int type;              /* SOCK_DGRAM or SOCK_RAW */
    t_scalar_t tsdu4, tsdu6; /* TSDU_size over IPv4 (and unbound), over IPv6 */
};
extern const struct udp_kind udp_kind_udp;

/* An option value negotiated before the socket existed (applied at bind),
 * or one the provider keeps itself (XTI_DEBUG, XTI_LINGER: udp_opt.c). */
struct udp_optv {
    int set;
    long a, b; /* the value (b: l_linger of XTI_LINGER) */
};

struct udp_ep {
    queue_t *rq;          /* fixed */
    const struct udp_kind *kind; /* fixed */
    t_uscalar_t id;       /* fixed: ACCEPTOR_id (unused by T_CLTS, answered) */
    pthread_mutex_t lk;
    pthread_cond_t cv;    /* with lk: io_users fell to 0 */
    int state;            /* LK: TS_UNBND or TS_IDLE */
    int fd;               /* LK: the socket, -1 when unbound */
    int family;           /* LK: AF_INET or AF_INET6 while bound */
    int proto;            /* LK: rawip: the IP protocol while bound */
    int io_users;         /* LK: I/O claims */
    int dead_fd;          /* LK: the socket given up under a claim of the
                           * unbinding thread: closed when the claims drain */
    struct sockaddr_in6 addr; /* LK: bound address (getsockname) */
    socklen_t alen;           /* LK */
    struct udp_optv opt[UDP_NOPTS]; /* LK: options negotiated while unbound,
                                     * and those kept here (udp_opt.c) */
    struct ust_iow io;    /* registration with the epoll thread while bound */
    atomic_int tx;        /* the sender's claim: a put sending directly, or the write
                           * service procedure's batch (udp_data.c): one at a time,
                           * so a direct send never overtakes a batch taken off q */
    int gso_off;          /* TX (under the claim tx): UDP_SEGMENT refused with EINVAL
                           * or EIO once: the drain sends no more runs (udp_data.c) */
};

/* udp_opt.c: T_OPTMGMT_REQ (any state). */
void udp_optmgmt_req(queue_t *q, mblk_t *mp);
/* udp_opt.c: set the options stored in ep->opt on the new socket fd of
 * family (before bind).  No lock needed: the socket is not published yet. */
void udp_opt_apply(struct udp_ep *ep, int fd, int family);

#define UDP_TSDU4 65507 /* largest UDP payload over IPv4: TSDU_size */
#define UDP_TSDU6 65527 /* ... over IPv6 (no jumbograms) */

/* udp.c: TSDU_size of ep's kind for family. */
t_scalar_t udp_tsdu(const struct udp_ep *ep, int family);

/* udp.c: the procedures rawip.c shares: open an endpoint of kind k (its
 * qi_qopen calls this), close, the put procedures. */
int udp_open_kind(queue_t *q, dev_t *devp, int sflag, const struct udp_kind *k);
int udp_close(queue_t *q, int oflag, cred_t *crp);
int udp_rput(queue_t *q, mblk_t *mp);
int udp_wput(queue_t *q, mblk_t *mp);

/* udp_data.c: T_UNITDATA_REQ from the put procedure; the write and read
 * service procedures (contracts at their definitions). */
void udp_unitdata_req(queue_t *q, mblk_t *mp);
int udp_wsrv(queue_t *q);
int udp_rsrv(queue_t *q);

/* udp.c: I/O claim (see above); -1 when unbound. */
int udp_io_get(struct udp_ep *ep);
void udp_io_put(struct udp_ep *ep);
/* Whether fd, from a claim still held, is still ep's socket. */
int udp_io_valid(struct udp_ep *ep, int fd);

#endif /* UST_UDP_H */
