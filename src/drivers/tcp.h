/* SPDX-License-Identifier: MIT */
/*
 * tcp.h -- private to the tcp TPI provider (tcp.c, tcp_conn.c, tcp_data.c,
 * tcp_opt.c): the endpoint, its lock legend, the contracts between the
 * files.  docs/TPI.md "tcp" describes the provider.
 *
 * Locking
 *   tcp_glock (tcp.c) guards the list of endpoints (ACCEPTOR_id lookup,
 *   fork) and every endpoint's `refs`.  ep->lk guards the fields marked LK.
 *   ep->sw serializes the sequences that replace an endpoint's socket
 *   (tcp_sock_take ... tcp_sock_give); it is held by put procedures, close
 *   and the read service procedure (after dropping its I/O claim), and only
 *   while holding no I/O claim, since tcp_sock_take waits for the claims.
 *   Order: tcp_glock, then ep->sw, then ep->lk.  Two sw are never held
 *   together (T_CONN_RES holds the acceptor's, or the listener's when it
 *   accepts on itself), nor two lk.
 *   Both are leaves otherwise: never held across putnext/qreply, a socket
 *   call that may block, or ust_iow_add/del.
 * I/O claims
 *   As udp (udp.h): a service procedure, or a put procedure using the
 *   socket, takes a claim (tcp_io_get: io_users++, returns fd) and drops it
 *   when done (tcp_io_put).  Only put procedures (T_CONN_REQ, T_CONN_RES,
 *   T_DISCON_REQ, T_UNBIND_REQ) and close replace or close the socket, after
 *   setting fd to -1 and waiting for io_users to drain (tcp_sock_take), so a
 *   service procedure never sees a descriptor closed under it -- except
 *   that a take on the thread that holds claims (a put procedure the
 *   perimeter runs inside a service procedure's putnext) waits only for the
 *   other threads': the claims are recorded per thread, and the service
 *   procedure checks tcp_io_valid after each putnext.  A service
 *   procedure that finds the connection over (reset, refused) only records
 *   it (`dead`); the socket stays open until the next such primitive.
 * Invariant: ep->fd >= 0 exactly while it is registered with the epoll
 *   thread (ep->io).  ep->lfd, a listening socket set aside while the
 *   listener accepted a connection on itself, and the sockets of pending
 *   connection indications are not registered.
 * Upward order
 *   Every indication (T_CONN_CON, T_CONN_IND, data, T_EXDATA_IND,
 *   T_ORDREL_IND, T_DISCON_IND) is sent by the read service procedure, the
 *   only upward writer besides the acknowledgements of the put procedure.
 *   A put procedure whose ack must precede an indication holds the state in
 *   a TS_WACK_* value until the ack is sent, which the read service
 *   procedure does not act on, then qenables it.
 */
#ifndef UST_TCP_H
#define UST_TCP_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stream.h>
#include <sys/tihdr.h>

#include "inet_io.h"

#define TCP_OPT_MAX 1024 /* OPT_size */
#define TCP_NOPTS 13     /* the options of tcp_opt.c */
#define TCP_QLEN_MAX 128 /* CONIND_number is reduced to this */
#define TCP_ETSDU 1      /* ETSDU_size: one urgent byte (MSG_OOB) */

/* A value negotiated while there is no socket, applied to the next one. */
struct tcp_optv {
    int set;
    long a, b; /* the value (b: second field of t_kpalive / t_linger) */
};

/* A connection the kernel accepted, indicated to the user, not yet answered. */
struct tcp_conind {
    struct tcp_conind *next;
    t_scalar_t seq;
    int fd; /* the accepted socket, non-blocking, not registered */
    struct sockaddr_in6 addr; /* the connector's address */
    socklen_t alen;
};

struct tcp_ep {
    struct tcp_ep *next; /* tcp_glock: on the list of endpoints */
    struct tcp_ep **prevp; /* tcp_glock: the link pointing at it (O(1) unlink at close) */
    int refs;            /* tcp_glock: T_CONN_RES of a listener using us as acceptor */
    int closing;         /* tcp_glock: close has begun, no new reference */
    queue_t *rq;         /* fixed */
    t_uscalar_t id;      /* fixed: ACCEPTOR_id */
    pthread_mutex_t sw;  /* serializes replacing the socket (take, give, relisten); above lk */
    pthread_mutex_t lk;
    pthread_cond_t cv;   /* with lk: io_users fell to 0 */
    int state;           /* LK: TS_* */
    int fd;              /* LK: the socket in use, -1 none (registered: see above) */
    int lfd;             /* LK: listening socket set aside (accepted on itself), -1 */
    int family;          /* LK: AF_INET or AF_INET6 once bound */
    int io_users;        /* LK: I/O claims */
    unsigned sock_gen;   /* LK: bumped by every tcp_sock_take (tcp_io_valid) */
    int anon;            /* LK: bound with ADDR_length 0 (the family may change) */
    int anyport;         /* LK: no port was asked for (or accepted): a new socket takes any */
    int used;            /* LK: fd has been connected (or tried): the next connection needs a new one */
    int dead;            /* LK: connection over (reset, refused): queued data is discarded */
    int eof;             /* LK: T_ORDREL_IND sent: the socket is not read any more */
    int werr;            /* LK: errno of a failed send, for the read side's T_DISCON_IND */
    t_uscalar_t qlen;    /* LK: CONIND_number granted (listener) */
    struct sockaddr_in6 addr; /* LK: local address (alen 0: none) */
    socklen_t alen;           /* LK */
    struct sockaddr_in6 raddr; /* LK: remote address while connected */
    socklen_t ralen;           /* LK */
    struct tcp_conind *ind;    /* LK: listener: outstanding indications, oldest first */
    t_uscalar_t nind;          /* LK: their number */
    t_scalar_t seq;            /* LK: last SEQ_number */
    timeout_id_t acc_tid;      /* LK: listener: the last retry of accept4 armed (out of descriptors) */
    struct tcp_optv opt[TCP_NOPTS]; /* LK: options to set on the next socket */
    struct ust_iow io; /* registration of fd with the epoll thread */
    size_t rsize;      /* read service procedure only (one run at a time): the size
                        * its next readv asks, adapted to what the last ones got */
    atomic_int tx;     /* the sender's claim: a put sending directly or the write
                        * service procedure's turn (tcp_data.c): one at a time, so a
                        * direct send never overtakes data taken off the queue */
};

/* --- tcp.c --- */

/* I/O claim (above); -1 when there is no socket. */
int tcp_io_get(struct tcp_ep *ep);
void tcp_io_put(struct tcp_ep *ep);
/* Whether this thread's innermost claim of ep still covers ep's socket: 0
 * once the socket was taken (tcp_sock_take), e.g. by a put procedure the
 * perimeter ran inside the claimant's putnext.  Checked after every putnext
 * made under a claim, before the socket is used again; the descriptor may
 * already be closed then. */
int tcp_io_valid(struct tcp_ep *ep);
/* Take the socket away from ep: fd -1, claims drained, unregistered.
 * Returns the descriptor (the caller closes it), -1 if none.  Put
 * procedures and close only; no lock held. */
int tcp_sock_take(struct tcp_ep *ep);
/* Install socket fd (non-blocking, unregistered) as ep's: registers it and
 * qenables the read queue.  0 or an errno (fd then still the caller's). */
int tcp_sock_give(struct tcp_ep *ep, int fd);
/* A new non-blocking socket of family with ep's stored options, bound to a
 * (alen bytes).  Returns fd, or -1 with *tli / *uerr the TPI error. */
int tcp_sock_new(struct tcp_ep *ep, int family, const void *a, socklen_t alen, t_scalar_t *tli,
                 int *uerr);
/* Close fd; abortively (RST) when rst. */
void tcp_sock_close(int fd, int rst);
/* The endpoint with ACCEPTOR_id id, referenced (tcp_ep_rele), or NULL. */
struct tcp_ep *tcp_ep_find(t_uscalar_t id);
void tcp_ep_rele(struct tcp_ep *ep);

/* --- tcp_conn.c --- */
void tcp_conn_req(queue_t *q, mblk_t *mp);
void tcp_conn_res(queue_t *q, mblk_t *mp);
void tcp_discon_req(queue_t *q, mblk_t *mp);
/* Under ep->lk: free the pending indications (their sockets reset). */
void tcp_ind_free(struct tcp_ep *ep);
/* A listener that accepted a connection on itself and is back in TS_IDLE
 * listens again: the connection's socket is closed and the set-aside
 * listening socket installed.  Takes ep->sw; no I/O claim held. */
void tcp_relisten(struct tcp_ep *ep);
/* Read service part: a listener takes connections from the kernel's accept
 * queue as T_CONN_IND while it has room for them (qlen, canputnext).  When
 * accept4 fails for want of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM) it
 * tries again TCP_ACCEPT_RETRY later (a timeout): no new readiness edge
 * would come for the connections already queued. */
void tcp_accept_ind(queue_t *q, struct tcp_ep *ep, int fd);
/* Close, after the socket was taken (no read service procedure arms
 * another): cancel the last retry armed (waits for one running). */
void tcp_accept_cancel(struct tcp_ep *ep);
/* Read service part: a connector in TS_WCON_CREQ learns the outcome of its
 * connect: T_CONN_CON or T_DISCON_IND(errno).  Returns 1 when connected. */
int tcp_connect_done(queue_t *q, struct tcp_ep *ep, int fd);

/* --- tcp_data.c --- */
/* T_DATA_REQ, T_EXDATA_REQ, T_OPTDATA_REQ, T_ORDREL_REQ, M_DATA (prim -1). */
void tcp_data_req(queue_t *q, mblk_t *mp, t_scalar_t prim);
int tcp_wsrv(queue_t *q);
int tcp_rsrv(queue_t *q);
/* Close: what the write queue q still holds (the stream head's close-time
 * drain was cut short: a non-blocking stream, or its close time passed)
 * goes to the socket fd, taken from ep already, as far as it takes it
 * without blocking; the rest is discarded with the queue.  Nothing is sent
 * after a disconnect or when XTI_LINGER asked for an abortive close. */
void tcp_close_out(queue_t *q, struct tcp_ep *ep, int fd);

/* --- tcp_opt.c --- */
void tcp_optmgmt_req(queue_t *q, mblk_t *mp);
/* Set the options stored in ep->opt on the new socket fd (no lock needed:
 * the socket is not published yet; ep->lk is taken to read them). */
void tcp_opt_apply(struct tcp_ep *ep, int fd, int family);

#endif /* UST_TCP_H */
