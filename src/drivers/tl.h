/* SPDX-License-Identifier: MIT */
/*
 * tl.h -- private to the loopback TPI transports (tl.c, tl_cots.c,
 * tl_clts.c, tl_opt.c; udp.c and udp_opt.c use its TPI helpers: tl_prim,
 * tl_append, the acks, tl_range_ok, tl_opts_ok, tl_optput): the endpoint, the device, the one lock, and the
 * helpers the files share.  docs/TPI.md describes the transports.
 *
 * Locking (the whole driver has one lock)
 *   tl_lock guards every field marked "TL" below, in every endpoint and
 *   device: states, addresses, the peer and listener links, the lists of
 *   connection indications, the option values, busy/closing.  It is never
 *   held across putnext, qreply or anything that calls a module procedure;
 *   under it the driver only allocates messages, qenables and signals
 *   tl_cv.  It is taken below no other lock of the library (the stream
 *   head calls our put procedures with none of its locks held) and above
 *   the allocator and queue locks that allocb and qenable take.
 *   tl_cv (with tl_lock) is broadcast when a busy count falls to zero.
 * Claims ("busy")
 *   A thread that sends into another endpoint's read queue first takes a
 *   busy reference on it under tl_lock (tl_hold), uses the queue without the
 *   lock, then drops it (tl_rele).  Close marks the endpoint closing (no new
 *   claim can be taken: every lookup skips closing endpoints), unhooks every
 *   link to it, and waits for its busy count to drain before qprocsoff, as
 *   loop.c does.
 */
#ifndef UST_TL_H
#define UST_TL_H

#include <pthread.h>
#include <sys/stream.h>
#include <sys/tihdr.h>

#define TL_ADDR_MAX 128    /* ADDR_size */
#define TL_OPT_MAX 1024    /* OPT_size */
#define TL_TIDU 65536      /* TIDU_size, and TSDU_size of ticlts */
#define TL_QLEN_MAX 128    /* CONIND_number is reduced to this */
#define TL_HIWAT 65536     /* write queue water marks (XTI_SNDBUF default) */
#define TL_LOWAT 16384
#define TL_RCVBUF 65536    /* XTI_RCVBUF default: the stream head's high-water mark */

/* One of the three devices. */
struct tl_dev {
    const char *name; /* "ticlts", "ticots", "ticotsord" */
    int servtype;     /* T_CLTS, T_COTS, T_COTS_ORD */
    t_scalar_t seq;   /* TL: last SEQ_number handed out */
    uint32_t autoaddr; /* TL: last automatic address */
};

/* A connection indication queued at a listener. */
struct tl_conind {
    struct tl_conind *next;
    t_scalar_t seq;
    struct tl_ep *conn; /* the connecting endpoint (its listener points back) */
};

/* XTI_GENERIC option values of an endpoint (TL). */
struct tl_opts {
    t_uscalar_t debug;
    t_scalar_t linger_onoff, linger_time;
    t_uscalar_t rcvbuf, rcvlowat, sndbuf, sndlowat;
};

/* A transport endpoint: one clone open. */
struct tl_ep {
    struct tl_ep *next;  /* TL: on tl_eps */
    struct tl_dev *dev;  /* fixed */
    queue_t *rq;         /* fixed: our read queue */
    t_uscalar_t id;      /* fixed: ACCEPTOR_id, nonzero, unique */
    int state;           /* TL: TS_* */
    int ns;              /* TL: the address is in the device's namespace (T_BIND_REQ) */
    size_t alen;         /* TL: local address (alen 0: none) */
    unsigned char addr[TL_ADDR_MAX];
    size_t ralen;        /* TL: remote address while connected */
    unsigned char raddr[TL_ADDR_MAX];
    t_uscalar_t qlen;    /* TL: CONIND_number granted */
    struct tl_conind *ind; /* TL: listener: outstanding indications, oldest first */
    t_uscalar_t nind;      /* TL: their number */
    struct tl_ep *listener; /* TL: connector in TS_WCON_CREQ: where it waits */
    t_scalar_t cseq;        /* TL: ... and its SEQ_number there */
    struct tl_ep *peer;  /* TL: connected peer (kept until both releases went) */
    struct tl_ep *cwait; /* TL: ticlts: the destination we wait on (flow control) */
    struct tl_opts opt;  /* TL */
    int busy;            /* TL: claims of other threads on rq */
    int closing;         /* TL: close has begun */
};

/* Notifications built under tl_lock, delivered after it is dropped. */
struct tl_note {
    struct tl_ep *ep;
    mblk_t *mp;
};
struct tl_notes {
    int n, cap;
    struct tl_note *v; /* small, or kmem_alloc'ed when more are needed */
    struct tl_note small[4];
};

extern pthread_mutex_t tl_lock;
extern struct tl_ep *tl_eps; /* TL: every open endpoint */

/* --- tl.c --- */

void tl_notes_init(struct tl_notes *nt);
/* Under tl_lock: queue mp for delivery up ep's read queue and claim ep.  mp NULL
 * (allocation failed) is dropped. */
void tl_note(struct tl_notes *nt, struct tl_ep *ep, mblk_t *mp);
/* Without tl_lock: deliver and release every note. */
void tl_notes_deliver(struct tl_notes *nt);
/* Drop a claim taken by tl_hold or tl_note; takes tl_lock. */
void tl_rele(struct tl_ep *ep);
/* Under tl_lock: claim ep unless it is NULL or closing; returns it or NULL. */
struct tl_ep *tl_hold_locked(struct tl_ep *ep);

/* A message block of type type holding a zeroed primitive of size bytes plus
 * room for extra more; NULL when out of memory.  If mp is given and its first
 * block is ours alone and large enough it is reused (its continuation freed). */
mblk_t *tl_prim(mblk_t *mp, int type, size_t size, size_t extra);
/* Append len bytes at p to the primitive in bp; the offset where they went. */
t_scalar_t tl_append(mblk_t *bp, const void *p, size_t len);
/* Acks, sent up q's read side (q is the write queue); mp is consumed. */
/* T_INFO_ACK with *ia (a snapshot the provider took under its lock). */
void tl_info_reply(queue_t *q, mblk_t *mp, const struct T_info_ack *ia);
/* T_CAPABILITY_ACK: of the bits asked, TC1_INFO (*ia) and TC1_ACCEPTOR_ID
 * (id); a short request is T_ERROR_ACK(TSYSERR, EINVAL). */
void tl_capability_reply(queue_t *q, mblk_t *mp, const struct T_info_ack *ia, t_uscalar_t id);
void tl_ok_ack(queue_t *q, mblk_t *mp, t_scalar_t prim);
void tl_error_ack(queue_t *q, mblk_t *mp, t_scalar_t prim, t_scalar_t tli, t_scalar_t unix_err);
/* M_ERROR(EPROTO) up the stream: a non-acknowledged primitive was bad. */
void tl_merror(queue_t *q, mblk_t *mp);
/* T_DISCON_IND with the reason and sequence number; NULL when out of memory. */
mblk_t *tl_discon_ind(t_scalar_t reason, t_scalar_t seq);

/* Whether [off, off+len) lies inside the first block of mp (len 0 always does). */
int tl_range_ok(const mblk_t *mp, t_scalar_t off, t_scalar_t len);
/* Whether an option area is a well-formed list of T_opthdr; len 0 is. */
int tl_opts_ok(const unsigned char *p, size_t len);
/* Under tl_lock: the endpoint of dev bound (in the namespace) to the address. */
struct tl_ep *tl_find_addr(struct tl_dev *dev, const unsigned char *a, size_t alen);

/* --- tl_cots.c --- */
void tl_conn_req(queue_t *q, mblk_t *mp);
void tl_conn_res(queue_t *q, mblk_t *mp);
void tl_discon_req(queue_t *q, mblk_t *mp);
/* T_DATA_REQ, T_EXDATA_REQ, T_OPTDATA_REQ, T_ORDREL_REQ and M_DATA. */
void tl_data_req(queue_t *q, mblk_t *mp, t_scalar_t prim);
int tl_cots_wsrv(queue_t *q);
/* Under tl_lock: tear down ep's connection state at close. */
void tl_cots_close(struct tl_ep *ep, struct tl_notes *nt);

/* --- tl_clts.c --- */
void tl_unitdata_req(queue_t *q, mblk_t *mp);
int tl_clts_wsrv(queue_t *q);
/* Under tl_lock: re-enable the senders waiting on ep (its reader drained, or
 * it closes). */
void tl_clts_wake(struct tl_ep *ep, int closing);

/* --- tl_opt.c --- */
void tl_opts_default(struct tl_opts *o);
/* The checks of a T_OPTMGMT_REQ that come before any option is looked at:
 * its size (TSYSERR, EINVAL), MGMT_flags (TBADFLAG), the option list's
 * place, length (at most opt_max) and form (TBADOPT).  0 with the request
 * in *rp, or -1 with the T_ERROR_ACK sent (mp used). */
int tl_optmgmt_check(queue_t *q, mblk_t *mp, t_scalar_t opt_max, struct T_optmgmt_req *rp);
void tl_optmgmt_req(queue_t *q, mblk_t *mp);
/* Append an option (T_opthdr with level, name, status, then vlen bytes of
 * val, padded to _TPI_ALIGN_TOPT) to bp, which has room; *worst becomes the
 * worse of itself and status (T_NOTSUPPORT > T_READONLY > T_FAILURE >
 * T_PARTSUCCESS > T_SUCCESS).  Shared with udp_opt.c. */
void tl_optput(mblk_t *bp, t_uscalar_t level, t_uscalar_t name, t_uscalar_t status,
               const unsigned char *val, size_t vlen, t_uscalar_t *worst);
/* XNS 5's legal values of XTI_LINGER: T_SUCCESS when l_onoff is T_YES or
 * T_NO and l_linger is T_UNSPEC, T_INFINITE or >= 0, else T_FAILURE.
 * Shared with udp_opt.c and tcp_opt.c. */
t_uscalar_t tl_linger_check(long onoff, long linger);

#endif /* UST_TL_H */
