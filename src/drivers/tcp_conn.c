/* SPDX-License-Identifier: MIT */
/*
 * tcp_conn.c -- connections of the tcp provider (tcp.h, docs/TPI.md "tcp"):
 * T_CONN_REQ (asynchronous connect), the listener's T_CONN_IND from the
 * kernel's accept queue, T_CONN_RES onto the listener itself or another
 * endpoint, T_DISCON_REQ, and the connector's T_CONN_CON / T_DISCON_IND.
 *
 * Principles of operation
 *   Connect: T_CONN_REQ makes (or re-makes) the endpoint's socket, calls a
 *   non-blocking connect, acknowledges, and then waits in TS_WCON_CREQ
 *   with EPOLLOUT armed.  The outcome is taken by the read service
 *   procedure (tcp_connect_done): SO_ERROR 0 and a peer -> T_CONN_CON,
 *   an error -> T_DISCON_IND with the errno as DISCON_reason.
 *   Listen: a listener's read service procedure accepts from the kernel's
 *   queue while fewer than qlen indications are outstanding and the stream
 *   above has room; each accepted socket waits, unwatched, in the list of
 *   indications (tcp_conind) under its SEQ_number.  T_CONN_RES moves it to
 *   the acceptor (whose own socket, if bound, is closed); T_DISCON_REQ
 *   resets it.  Accepting on the listener itself sets its listening socket
 *   aside (lfd) for the connection's life; tcp_relisten puts it back.
 *   A connection's socket is not reused for another connection: T_CONN_REQ
 *   on an endpoint whose socket was used makes a new one bound to the
 *   endpoint's address -- or, when the endpoint was bound to port 0 or was
 *   an acceptor and its port is taken (TIME_WAIT, the listener), to
 *   another port of the kernel's choosing.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/socket.h>
#include <sys/stream.h>
#include <unistd.h>

#include "tcp.h"
#include "tl.h"

static int tcp_connected(int state)
{
    return state == TS_DATA_XFER || state == TS_WIND_ORDREL || state == TS_WREQ_ORDREL;
}

void tcp_ind_free(struct tcp_ep *ep)
{
    struct tcp_conind *ci;

    while ((ci = ep->ind) != NULL) {
        ep->ind = ci->next;
        tcp_sock_close(ci->fd, 1);
        kmem_free(ci, sizeof(*ci));
    }
    ep->nind = 0;
}

/* Under ep->lk: unlink the indication seq; NULL if none. */
static struct tcp_conind *tcp_ind_take(struct tcp_ep *ep, t_scalar_t seq)
{
    for (struct tcp_conind **pp = &ep->ind; *pp != NULL; pp = &(*pp)->next) {
        struct tcp_conind *ci = *pp;
        if (ci->seq == seq) {
            *pp = ci->next;
            ep->nind--;
            return ci;
        }
    }
    return NULL;
}

void tcp_relisten(struct tcp_ep *ep)
{
    int fd = -1, lfd = -1;

    pthread_mutex_lock(&ep->sw);
    pthread_mutex_lock(&ep->lk);
    if (ep->state == TS_IDLE && ep->lfd >= 0) {
        lfd = ep->lfd;
        ep->lfd = -1;
    }
    pthread_mutex_unlock(&ep->lk);
    if (lfd >= 0) {
        fd = tcp_sock_take(ep);
        pthread_mutex_lock(&ep->lk);
        ep->dead = ep->eof = ep->werr = 0;
        ep->ralen = 0;
        pthread_mutex_unlock(&ep->lk);
        tcp_sock_close(fd, 0);
        if (tcp_sock_give(ep, lfd) != 0)
            close(lfd); /* epoll refused it: the endpoint stays bound without a socket */
    }
    pthread_mutex_unlock(&ep->sw);
}

/* The TPI error of a connect(2) that failed at once with err, 0 if the
 * failure is an outcome (T_DISCON_IND) rather than a refusal of the request. */
static t_scalar_t tcp_connect_error(int err)
{
    switch (err) {
    case ECONNREFUSED:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ETIMEDOUT:
    case ECONNRESET:
        return 0;
    case EADDRINUSE:
    case EADDRNOTAVAIL:
        return TADDRBUSY;
    case EAFNOSUPPORT:
    case EINVAL:
        return TBADADDR;
    case EACCES:
    case EPERM:
        return TACCES;
    default:
        return TSYSERR;
    }
}

/*
 * T_CONN_REQ: in TS_IDLE, not listening (TOUTSTATE).  DEST a sockaddr of the
 * endpoint's family (TBADADDR; an endpoint bound with ADDR_length 0 takes
 * the family of its first DEST), options well formed (TBADOPT, otherwise
 * ignored), no data (TBADDATA: CDATA_size is T_INVALID).  TSYSERR/EBUSY if
 * the orderly release of the previous connection is still queued.  A
 * connect that fails at once with ECONNREFUSED and the like is
 * acknowledged and followed by T_DISCON_IND with that errno.
 */
void tcp_conn_req(queue_t *q, mblk_t *mp)
{
    struct tcp_ep *ep = q->q_ptr;
    struct T_conn_req cr;
    struct sockaddr_in6 dest, local;
    socklen_t dlen = 0, llen = 0;
    int family = 0, efamily, state, fd = -1, old = -1, remake = 0, anyport = 0, uerr = 0, rc;
    int queued;
    t_scalar_t err = 0;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(cr)) {
        tl_error_ack(q, mp, T_CONN_REQ, TSYSERR, EINVAL);
        return;
    }
    memcpy(&cr, mp->b_rptr, sizeof(cr));
    pthread_mutex_lock(&ep->sw);
    queued = qsize(q) > 0;
    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    efamily = ep->family;
    if (state != TS_IDLE || ep->qlen > 0)
        err = TOUTSTATE;
    else if (cr.DEST_length <= 0 || !tl_range_ok(mp, cr.DEST_offset, cr.DEST_length) ||
             (family = inet_addr_family(mp->b_rptr + cr.DEST_offset,
                                        (size_t)cr.DEST_length)) == 0 ||
             (family != efamily && !ep->anon))
        err = TBADADDR;
    else if (!tl_range_ok(mp, cr.OPT_offset, cr.OPT_length) ||
             !tl_opts_ok(mp->b_rptr + cr.OPT_offset, (size_t)cr.OPT_length))
        err = TBADOPT;
    else if (msgdsize(mp->b_cont) > 0)
        err = TBADDATA;
    else if (queued)
        err = TSYSERR, uerr = EBUSY;
    if (err == 0) {
        ep->state = TS_WACK_CREQ;
        remake = ep->fd < 0 || ep->used || family != efamily;
        dlen = (socklen_t)cr.DEST_length;
        memcpy(&dest, mp->b_rptr + cr.DEST_offset, dlen);
        memcpy(&local, &ep->addr, sizeof(local));
        llen = ep->alen;
        anyport = ep->anyport;
    }
    pthread_mutex_unlock(&ep->lk);
    if (err != 0) {
        pthread_mutex_unlock(&ep->sw);
        tl_error_ack(q, mp, T_CONN_REQ, err, uerr);
        return;
    }
    if (remake) {
        /* a new socket where the old one was bound: the same address; if
         * its port is taken (TIME_WAIT, or the listener's port of an
         * acceptor) and none was asked for, any port of it.  An anonymous
         * endpoint of another family: any address of that family. */
        if (family != efamily) {
            memset(&local, 0, sizeof(local));
            local.sin6_family = (sa_family_t)family;
            llen = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        }
        old = tcp_sock_take(ep);
        tcp_sock_close(old, 0);
        fd = tcp_sock_new(ep, family, &local, llen, &err, &uerr);
        if (fd < 0 && uerr == EADDRINUSE && anyport) {
            local.sin6_port = 0; /* sin_port is at the same offset */
            fd = tcp_sock_new(ep, family, &local, llen, &err, &uerr);
        }
        if (fd >= 0) {
            llen = sizeof(local);
            getsockname(fd, (struct sockaddr *)&local, &llen);
            pthread_mutex_lock(&ep->lk);
            ep->family = family;
            memcpy(&ep->addr, &local, llen);
            ep->alen = llen;
            ep->used = 0;
            pthread_mutex_unlock(&ep->lk);
            uerr = tcp_sock_give(ep, fd);
            if (uerr != 0) {
                close(fd);
                fd = -1;
                err = TSYSERR;
            }
        }
        if (fd < 0) {
            pthread_mutex_lock(&ep->lk);
            ep->state = TS_IDLE;
            pthread_mutex_unlock(&ep->lk);
            pthread_mutex_unlock(&ep->sw);
            tl_error_ack(q, mp, T_CONN_REQ, err != 0 ? err : TADDRBUSY, uerr);
            return;
        }
    }
    fd = tcp_io_get(ep);
    rc = fd >= 0 && connect(fd, (struct sockaddr *)&dest, dlen) < 0 ? errno : 0;
    if (fd >= 0)
        tcp_io_put(ep);
    else
        rc = EBADF;
    pthread_mutex_lock(&ep->lk);
    ep->used = 1;
    ep->dead = ep->eof = ep->werr = 0;
    memcpy(&ep->raddr, &dest, dlen);
    ep->ralen = dlen;
    err = rc == 0 || rc == EINPROGRESS ? 0 : tcp_connect_error(rc);
    if (err != 0)
        ep->state = TS_IDLE;
    pthread_mutex_unlock(&ep->lk);
    pthread_mutex_unlock(&ep->sw);
    if (err != 0) {
        tl_error_ack(q, mp, T_CONN_REQ, err, rc);
        return;
    }
    tl_ok_ack(q, mp, T_CONN_REQ);
    if (rc != 0 && rc != EINPROGRESS) { /* refused at once: the outcome */
        mblk_t *bp = tl_discon_ind(rc, -1);
        pthread_mutex_lock(&ep->lk);
        ep->state = TS_IDLE;
        ep->dead = 1;
        pthread_mutex_unlock(&ep->lk);
        if (bp != NULL)
            qreply(q, bp);
        return;
    }
    pthread_mutex_lock(&ep->lk);
    ep->state = TS_WCON_CREQ;
    pthread_mutex_unlock(&ep->lk);
    ust_iow_want_out(&ep->io);
    qenable(RD(q));
}

int tcp_connect_done(queue_t *q, struct tcp_ep *ep, int fd)
{
    struct sockaddr_in6 peer;
    socklen_t plen = sizeof(peer), elen;
    struct T_conn_con *cc;
    int soerr = 0;
    mblk_t *bp;

    elen = sizeof(soerr);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen) < 0)
        soerr = errno;
    if (soerr == 0 && getpeername(fd, (struct sockaddr *)&peer, &plen) < 0) {
        if (errno == ENOTCONN) { /* still in progress: wait for writability */
            ust_iow_want_out(&ep->io);
            return 0;
        }
        soerr = errno;
    }
    if (soerr != 0) {
        bp = tl_discon_ind(soerr, -1);
        pthread_mutex_lock(&ep->lk);
        if (ep->state != TS_WCON_CREQ) {
            pthread_mutex_unlock(&ep->lk);
            freemsg(bp);
            return 0;
        }
        ep->state = TS_IDLE;
        ep->dead = 1;
        pthread_mutex_unlock(&ep->lk);
        if (bp != NULL)
            putnext(q, bp);
        return 0;
    }
    bp = tl_prim(NULL, M_PROTO, sizeof(*cc), sizeof(peer));
    if (bp == NULL) { /* out of memory: retried at the next enable */
        qenable(q);
        return 0;
    }
    cc = (struct T_conn_con *)(void *)bp->b_rptr;
    cc->PRIM_type = T_CONN_CON;
    cc->RES_length = (t_scalar_t)plen;
    cc->RES_offset = tl_append(bp, &peer, plen);
    pthread_mutex_lock(&ep->lk);
    if (ep->state != TS_WCON_CREQ) {
        pthread_mutex_unlock(&ep->lk);
        freemsg(bp);
        return 0;
    }
    ep->state = TS_DATA_XFER;
    memcpy(&ep->raddr, &peer, plen);
    ep->ralen = plen;
    pthread_mutex_unlock(&ep->lk);
    putnext(q, bp);
    return 1;
}

#define TCP_ACCEPT_RETRY 100000 /* microseconds */

/* The retry's timeout (arg: the listener's read queue): accept again.  It
 * touches nothing of the endpoint, so a recorded id that has fired needs no
 * bookkeeping: close cancels the last one armed (waiting if it runs). */
static void tcp_accept_retry(void *arg)
{
    qenable((queue_t *)arg);
}

void tcp_accept_cancel(struct tcp_ep *ep)
{
    timeout_id_t tid;

    pthread_mutex_lock(&ep->lk);
    tid = ep->acc_tid;
    ep->acc_tid = 0;
    pthread_mutex_unlock(&ep->lk);
    if (tid != 0)
        quntimeout(ep->rq, tid);
}

void tcp_accept_ind(queue_t *q, struct tcp_ep *ep, int fd)
{
    for (;;) {
        struct sockaddr_in6 sa;
        socklen_t salen = sizeof(sa);
        struct T_conn_ind *ci;
        struct tcp_conind *ind;
        int ok, nfd, one = 1;
        mblk_t *bp;

        pthread_mutex_lock(&ep->lk);
        ok = (ep->state == TS_IDLE || ep->state == TS_WRES_CIND) && ep->nind < ep->qlen;
        pthread_mutex_unlock(&ep->lk);
        if (!ok || !canputnext(q))
            return; /* an answer (T_CONN_RES, T_DISCON_REQ) or back-enabling resumes */
        nfd = accept4(fd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (nfd < 0) {
            int err = errno;
            if (err == EINTR || err == ECONNABORTED || err == EPROTO)
                continue;
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                /* a new retry replaces the last (fired, or about to) */
                timeout_id_t tid = qtimeout(q, tcp_accept_retry, q,
                                            drv_usectohz(TCP_ACCEPT_RETRY)), old;
                pthread_mutex_lock(&ep->lk);
                old = ep->acc_tid;
                ep->acc_tid = tid;
                pthread_mutex_unlock(&ep->lk);
                if (old != 0)
                    quntimeout(q, old);
            }
            return; /* EAGAIN: the next connection is a new edge */
        }
        bp = tl_prim(NULL, M_PROTO, sizeof(*ci), sizeof(sa));
        ind = kmem_alloc(sizeof(*ind), KM_NOSLEEP);
        if (bp == NULL || ind == NULL) { /* out of memory: the connection is reset */
            freemsg(bp);
            if (ind != NULL)
                kmem_free(ind, sizeof(*ind));
            tcp_sock_close(nfd, 1);
            continue;
        }
        setsockopt(nfd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)); /* inherited; made sure */
        ind->fd = nfd;
        memcpy(&ind->addr, &sa, salen);
        ind->alen = salen;
        ind->next = NULL;
        ci = (struct T_conn_ind *)(void *)bp->b_rptr;
        ci->PRIM_type = T_CONN_IND;
        ci->SRC_length = (t_scalar_t)salen;
        ci->SRC_offset = tl_append(bp, &sa, salen);
        pthread_mutex_lock(&ep->lk);
        if (++ep->seq <= 0)
            ep->seq = 1;
        ind->seq = ci->SEQ_number = ep->seq;
        struct tcp_conind **pp = &ep->ind;
        while (*pp != NULL)
            pp = &(*pp)->next;
        *pp = ind;
        ep->nind++;
        ep->state = TS_WRES_CIND;
        pthread_mutex_unlock(&ep->lk);
        putnext(q, bp);
        if (!tcp_io_valid(ep))
            return; /* an answer run inside the putnext took the socket */
    }
}

/*
 * T_CONN_RES: in TS_WRES_CIND.  ACCEPTOR_id 0 or the listener's own id
 * accepts on the listener (TINDOUT if other indications are outstanding);
 * otherwise an open tcp endpoint (TBADF) in TS_UNBND or TS_IDLE
 * (TOUTSTATE), not listening (TRESQLEN), with nothing left to send
 * (TSYSERR/EBUSY).  TBADSEQ: no such indication; TBADOPT, TBADDATA as
 * T_CONN_REQ.  The acceptor's own socket (if bound) is closed and it takes
 * the accepted one, with the options the acceptor negotiated: its local
 * address becomes the connection's.
 */
void tcp_conn_res(queue_t *q, mblk_t *mp)
{
    struct tcp_ep *ep = q->q_ptr, *a = NULL;
    struct T_conn_res cr;
    struct tcp_conind *ci = NULL;
    struct sockaddr_in6 la;
    socklen_t lalen = sizeof(la);
    int astate = 0, self = 0, uerr = 0, old, found = 0;
    t_scalar_t err = 0;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(cr)) {
        tl_error_ack(q, mp, T_CONN_RES, TSYSERR, EINVAL);
        return;
    }
    memcpy(&cr, mp->b_rptr, sizeof(cr));
    pthread_mutex_lock(&ep->lk);
    if (ep->state != TS_WRES_CIND)
        err = TOUTSTATE;
    else if (!tl_range_ok(mp, cr.OPT_offset, cr.OPT_length) ||
             !tl_opts_ok(mp->b_rptr + cr.OPT_offset, (size_t)cr.OPT_length))
        err = TBADOPT;
    else if (msgdsize(mp->b_cont) > 0)
        err = TBADDATA;
    self = cr.ACCEPTOR_id == 0 || cr.ACCEPTOR_id == ep->id;
    pthread_mutex_unlock(&ep->lk);
    if (err == 0 && !self) {
        a = tcp_ep_find(cr.ACCEPTOR_id);
        if (a == NULL) {
            err = TBADF;
        } else {
            int queued;
            pthread_mutex_lock(&a->sw);
            queued = qsize(WR(a->rq)) > 0;
            pthread_mutex_lock(&a->lk);
            astate = a->state;
            if (astate != TS_UNBND && astate != TS_IDLE)
                err = TOUTSTATE;
            else if (a->qlen > 0)
                err = TRESQLEN;
            else if (queued)
                err = TSYSERR, uerr = EBUSY;
            else
                a->state = TS_WACK_CRES; /* reserved: its own primitives wait their turn */
            pthread_mutex_unlock(&a->lk);
        }
    }
    if (err == 0) {
        pthread_mutex_lock(&ep->lk);
        for (struct tcp_conind *i = ep->ind; i != NULL; i = i->next)
            found |= i->seq == cr.SEQ_number;
        if (ep->state != TS_WRES_CIND)
            err = TOUTSTATE;
        else if (!found)
            err = TBADSEQ;
        else if (self && ep->nind > 1)
            err = TINDOUT;
        else
            ci = tcp_ind_take(ep, cr.SEQ_number);
        if (ci != NULL)
            ep->state = self ? TS_WACK_CRES : ep->nind == 0 ? TS_IDLE : TS_WRES_CIND;
        pthread_mutex_unlock(&ep->lk);
        if (err != 0 && a != NULL) {
            pthread_mutex_lock(&a->lk);
            a->state = astate;
            pthread_mutex_unlock(&a->lk);
        }
    }
    if (err != 0) {
        if (a != NULL) {
            pthread_mutex_unlock(&a->sw);
            tcp_ep_rele(a);
        }
        tl_error_ack(q, mp, T_CONN_RES, err, uerr);
        return;
    }
    if (self) {
        a = ep;
        pthread_mutex_lock(&ep->sw);
        old = tcp_sock_take(ep); /* the listening socket, set aside */
        pthread_mutex_lock(&ep->lk);
        ep->lfd = old;
        pthread_mutex_unlock(&ep->lk);
    } else {
        old = tcp_sock_take(a);
        tcp_sock_close(old, 0);
    }
    if (getsockname(ci->fd, (struct sockaddr *)&la, &lalen) < 0)
        lalen = 0;
    if (!self) /* what the acceptor negotiated before now applies */
        tcp_opt_apply(a, ci->fd, ci->addr.sin6_family);
    pthread_mutex_lock(&a->lk);
    a->state = TS_DATA_XFER;
    a->family = ci->addr.sin6_family;
    a->anon = 0;
    a->anyport = 1; /* the listener's port is not the acceptor's to bind again */
    a->used = 1;
    a->dead = a->eof = a->werr = 0;
    memcpy(&a->addr, &la, lalen);
    a->alen = lalen;
    memcpy(&a->raddr, &ci->addr, ci->alen);
    a->ralen = ci->alen;
    pthread_mutex_unlock(&a->lk);
    uerr = tcp_sock_give(a, ci->fd);
    if (uerr != 0) { /* epoll refused it: the connection is reset */
        tcp_sock_close(ci->fd, 1);
        pthread_mutex_lock(&a->lk);
        a->state = TS_IDLE;
        a->dead = 1;
        pthread_mutex_unlock(&a->lk);
    }
    pthread_mutex_unlock(&a->sw);
    kmem_free(ci, sizeof(*ci));
    if (!self)
        tcp_ep_rele(a);
    if (uerr != 0) {
        tl_error_ack(q, mp, T_CONN_RES, TSYSERR, uerr);
        if (self)
            tcp_relisten(ep);
        return;
    }
    tl_ok_ack(q, mp, T_CONN_RES);
    if (!self)
        qenable(RD(q)); /* room for another indication */
}

/*
 * T_DISCON_REQ: a connector in TS_WCON_CREQ abandons its connect (the
 * socket is reset); a listener in TS_WRES_CIND refuses SEQ_number (TBADSEQ
 * if unknown): the accepted socket is reset, so the peer sees ECONNRESET; a
 * connected endpoint aborts its connection (RST).  TBADDATA: no disconnect
 * data.  M_FLUSH(FLUSHRW) goes up before the T_OK_ACK, and the write queue
 * is discarded -- except for a listener refusing one indication, whose
 * other indications, queued above, must stay.
 */
void tcp_discon_req(queue_t *q, mblk_t *mp)
{
    struct tcp_ep *ep = q->q_ptr;
    struct T_discon_req dr;
    struct tcp_conind *ci = NULL;
    int state, fd = -1, relisten = 0;
    t_scalar_t err = 0;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(dr)) {
        tl_error_ack(q, mp, T_DISCON_REQ, TSYSERR, EINVAL);
        return;
    }
    memcpy(&dr, mp->b_rptr, sizeof(dr));
    pthread_mutex_lock(&ep->sw);
    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    if (state != TS_WCON_CREQ && state != TS_WRES_CIND && !tcp_connected(state))
        err = TOUTSTATE;
    else if (msgdsize(mp->b_cont) > 0)
        err = TBADDATA;
    else if (state == TS_WRES_CIND) {
        ci = tcp_ind_take(ep, dr.SEQ_number);
        if (ci == NULL)
            err = TBADSEQ;
        else if (ep->nind == 0)
            ep->state = TS_IDLE;
    } else {
        ep->state = TS_IDLE;
        ep->dead = 1;
        relisten = ep->lfd >= 0;
    }
    pthread_mutex_unlock(&ep->lk);
    if (err == 0 && ci == NULL) {
        fd = tcp_sock_take(ep);
        tcp_sock_close(fd, 1);
    }
    pthread_mutex_unlock(&ep->sw);
    if (err != 0) {
        tl_error_ack(q, mp, T_DISCON_REQ, err, 0);
        return;
    }
    if (ci != NULL) {
        tcp_sock_close(ci->fd, 1);
        kmem_free(ci, sizeof(*ci));
        tl_ok_ack(q, mp, T_DISCON_REQ);
        qenable(RD(q)); /* room for another indication */
        return;
    }
    flushq(q, FLUSHDATA);
    putnextctl1(RD(q), M_FLUSH, FLUSHRW);
    tl_ok_ack(q, mp, T_DISCON_REQ);
    if (relisten)
        tcp_relisten(ep);
}
