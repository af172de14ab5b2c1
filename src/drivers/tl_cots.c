/* SPDX-License-Identifier: MIT */
/*
 * tl_cots.c -- ticots and ticotsord: the connection state machine and data
 * transfer.  Locking and claims: tl.h.
 *
 * Principles of operation
 *   A listener (bound with CONIND_number > 0) keeps its outstanding
 *   connection indications in a list (tl_conind), oldest first; a connector
 *   in TS_WCON_CREQ points at the listener and knows its SEQ_number.  Both
 *   links change only under tl_lock, together, so either side can undo them
 *   (T_CONN_RES, T_DISCON_REQ, close) without looking at a stale pointer.
 *   Accepting links acceptor and connector through their peer fields, which
 *   the write service procedures follow to forward data.
 *   Indications for another endpoint are built under tl_lock as notes
 *   (tl_note: the target is claimed) and put up its read queue after the
 *   lock is dropped.  The acknowledgement of a request goes first when its
 *   order matters: T_OK_ACK before T_CONN_IND (the connector), T_CONN_CON
 *   before the listener's T_OK_ACK (so the acceptor cannot send data before
 *   the connector is confirmed).
 *   Data primitives are checked against the state in the put procedure and
 *   queued; the service procedure turns each *_REQ into its *_IND in place
 *   and forwards it in order, so T_ORDREL_IND follows the data sent before
 *   it.  The receiver's state changes when the T_ORDREL_IND is forwarded;
 *   the peers are unlinked when both are back in TS_IDLE.
 *   Expedited data (T_EXDATA_REQ, T_OPTDATA_REQ with T_ODF_EX) travels in
 *   band 1, so it overtakes normal data queued at either end.
 */
#include <errno.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/stream.h>

#include "tl.h"

static int tl_connected(int state)
{
    return state == TS_DATA_XFER || state == TS_WIND_ORDREL || state == TS_WREQ_ORDREL;
}

/* Under tl_lock: unlink the indication with seq from listener l; NULL if none. */
static struct tl_conind *tl_ind_take(struct tl_ep *l, t_scalar_t seq)
{
    for (struct tl_conind **pp = &l->ind; *pp != NULL; pp = &(*pp)->next) {
        struct tl_conind *ci = *pp;
        if (ci->seq == seq) {
            *pp = ci->next;
            l->nind--;
            if (l->nind == 0 && l->state == TS_WRES_CIND)
                l->state = TS_IDLE;
            return ci;
        }
    }
    return NULL;
}

/* Under tl_lock: the endpoint with ACCEPTOR_id id, or NULL. */
static struct tl_ep *tl_find_id(t_uscalar_t id)
{
    for (struct tl_ep *e = tl_eps; e != NULL; e = e->next)
        if (e->id == id && !e->closing)
            return e;
    return NULL;
}

/*
 * T_CONN_REQ: in TS_IDLE, not listening.  No listener at the address (or
 * its queue full) -> T_OK_ACK then T_DISCON_IND(ECONNREFUSED).  Errors:
 * TBADADDR (no or bad address), TBADOPT, TBADDATA (no connect data),
 * TSYSERR/EBUSY (the last orderly release of this endpoint is still queued).
 */
void tl_conn_req(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr, *l;
    struct T_conn_req cr;
    struct T_conn_ind *ci;
    struct tl_notes nt;
    struct tl_conind *ind;
    mblk_t *bp;
    int err = 0, uerr = 0, refused = 0;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(cr)) {
        tl_error_ack(q, mp, T_CONN_REQ, TSYSERR, EINVAL);
        return;
    }
    memcpy(&cr, mp->b_rptr, sizeof(cr));
    bp = tl_prim(NULL, M_PROTO, sizeof(*ci), TL_ADDR_MAX);
    ind = kmem_alloc(sizeof(*ind), KM_SLEEP);
    tl_notes_init(&nt);
    pthread_mutex_lock(&tl_lock);
    if (ep->state != TS_IDLE || ep->qlen > 0)
        err = TOUTSTATE;
    else if (cr.DEST_length <= 0 || cr.DEST_length > TL_ADDR_MAX ||
             !tl_range_ok(mp, cr.DEST_offset, cr.DEST_length))
        err = TBADADDR;
    else if (!tl_range_ok(mp, cr.OPT_offset, cr.OPT_length) ||
             !tl_opts_ok(mp->b_rptr + cr.OPT_offset, (size_t)cr.OPT_length))
        err = TBADOPT;
    else if (msgdsize(mp->b_cont) > 0)
        err = TBADDATA;
    else if (ep->peer != NULL || bp == NULL)
        err = TSYSERR, uerr = ep->peer != NULL ? EBUSY : ENOSR;
    if (err == 0) {
        l = tl_find_addr(ep->dev, mp->b_rptr + cr.DEST_offset, (size_t)cr.DEST_length);
        if (l == NULL || l->qlen == 0 || l->nind >= l->qlen ||
            (l->state != TS_IDLE && l->state != TS_WRES_CIND)) {
            refused = 1;
        } else {
            if (++ep->dev->seq <= 0)
                ep->dev->seq = 1;
            ind->seq = ep->dev->seq;
            ind->conn = ep;
            ind->next = NULL;
            struct tl_conind **pp = &l->ind;
            while (*pp != NULL)
                pp = &(*pp)->next;
            *pp = ind;
            ind = NULL;
            l->nind++;
            l->state = TS_WRES_CIND;
            ep->state = TS_WCON_CREQ;
            ep->listener = l;
            ep->cseq = ep->dev->seq;
            ci = (struct T_conn_ind *)(void *)bp->b_rptr;
            ci->PRIM_type = T_CONN_IND;
            ci->SRC_length = (t_scalar_t)ep->alen;
            ci->SRC_offset = tl_append(bp, ep->addr, ep->alen);
            ci->SEQ_number = ep->cseq;
            tl_note(&nt, l, bp);
            bp = NULL;
        }
    }
    pthread_mutex_unlock(&tl_lock);
    if (ind != NULL)
        kmem_free(ind, sizeof(*ind));
    if (bp != NULL)
        freemsg(bp);
    if (err != 0) {
        tl_error_ack(q, mp, T_CONN_REQ, err, uerr);
        return;
    }
    tl_ok_ack(q, mp, T_CONN_REQ);
    if (refused) {
        bp = tl_discon_ind(ECONNREFUSED, -1);
        if (bp != NULL)
            qreply(q, bp);
    }
    tl_notes_deliver(&nt);
}

/*
 * T_CONN_RES: in TS_WRES_CIND.  ACCEPTOR_id 0 or the listener's own id
 * accepts on the listener (TINDOUT if other indications are outstanding);
 * otherwise the acceptor must be an endpoint of the same device (TBADF:
 * unknown, TPROVMISMATCH: another device) in TS_UNBND or TS_IDLE
 * (TOUTSTATE), not listening (TRESQLEN).  TBADSEQ: no such indication.
 * An unbound acceptor takes the listener's address (outside the namespace).
 */
void tl_conn_res(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr, *a = NULL, *c;
    struct T_conn_res cr;
    struct T_conn_con *cc;
    struct tl_conind *ci = NULL;
    struct tl_notes nt;
    mblk_t *bp;
    int err = 0, uerr = 0;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(cr)) {
        tl_error_ack(q, mp, T_CONN_RES, TSYSERR, EINVAL);
        return;
    }
    memcpy(&cr, mp->b_rptr, sizeof(cr));
    bp = tl_prim(NULL, M_PROTO, sizeof(*cc), TL_ADDR_MAX);
    tl_notes_init(&nt);
    pthread_mutex_lock(&tl_lock);
    if (ep->state != TS_WRES_CIND)
        err = TOUTSTATE;
    else if (!tl_range_ok(mp, cr.OPT_offset, cr.OPT_length) ||
             !tl_opts_ok(mp->b_rptr + cr.OPT_offset, (size_t)cr.OPT_length))
        err = TBADOPT;
    else if (msgdsize(mp->b_cont) > 0)
        err = TBADDATA;
    else if (bp == NULL)
        err = TSYSERR, uerr = ENOSR;
    else if (cr.ACCEPTOR_id == 0 || cr.ACCEPTOR_id == ep->id)
        a = ep;
    else if ((a = tl_find_id(cr.ACCEPTOR_id)) == NULL)
        err = TBADF;
    else if (a->dev != ep->dev)
        err = TPROVMISMATCH;
    else if (a->state != TS_UNBND && a->state != TS_IDLE)
        err = TOUTSTATE;
    else if (a->qlen > 0)
        err = TRESQLEN;
    else if (a->peer != NULL)
        err = TSYSERR, uerr = EBUSY;
    if (err == 0) {
        int found = 0;
        for (struct tl_conind *i = ep->ind; i != NULL; i = i->next)
            found |= i->seq == cr.SEQ_number;
        if (!found)
            err = TBADSEQ;
        else if (a == ep && ep->nind > 1)
            err = TINDOUT;
        else if (a == ep && ep->peer != NULL)
            err = TSYSERR, uerr = EBUSY;
    }
    if (err == 0) {
        ci = tl_ind_take(ep, cr.SEQ_number);
        c = ci->conn;
        c->listener = NULL;
        if (a->state == TS_UNBND) {
            memcpy(a->addr, ep->addr, ep->alen);
            a->alen = ep->alen;
            a->ns = 0;
        }
        a->peer = c;
        c->peer = a;
        a->state = TS_DATA_XFER;
        c->state = TS_DATA_XFER;
        memcpy(a->raddr, c->addr, c->alen);
        a->ralen = c->alen;
        memcpy(c->raddr, a->addr, a->alen);
        c->ralen = a->alen;
        cc = (struct T_conn_con *)(void *)bp->b_rptr;
        cc->PRIM_type = T_CONN_CON;
        cc->RES_length = (t_scalar_t)a->alen;
        cc->RES_offset = tl_append(bp, a->addr, a->alen);
        tl_note(&nt, c, bp);
        bp = NULL;
    }
    pthread_mutex_unlock(&tl_lock);
    if (ci != NULL)
        kmem_free(ci, sizeof(*ci));
    if (bp != NULL)
        freemsg(bp);
    if (err != 0) {
        tl_error_ack(q, mp, T_CONN_RES, err, uerr);
        return;
    }
    tl_notes_deliver(&nt);
    tl_ok_ack(q, mp, T_CONN_RES);
}

/* Under tl_lock: break ep's connection; the peer (if still connected) is told
 * with T_DISCON_IND(ECONNRESET). */
static void tl_unlink(struct tl_ep *ep, struct tl_notes *nt)
{
    struct tl_ep *p = ep->peer;

    if (p == NULL)
        return;
    p->peer = NULL;
    ep->peer = NULL;
    if (tl_connected(p->state)) {
        p->state = TS_IDLE;
        tl_note(nt, p, tl_discon_ind(ECONNRESET, -1));
    }
    qenable(WR(p->rq)); /* its service procedure discards what it still holds */
}

/* Under tl_lock: a connector waiting at a listener withdraws its indication. */
static void tl_withdraw(struct tl_ep *ep, struct tl_notes *nt)
{
    struct tl_ep *l = ep->listener;
    struct tl_conind *ci;

    if (l == NULL)
        return;
    ci = tl_ind_take(l, ep->cseq);
    if (ci != NULL)
        kmem_free(ci, sizeof(*ci));
    tl_note(nt, l, tl_discon_ind(ECONNRESET, ep->cseq));
    ep->listener = NULL;
}

/* Under tl_lock: refuse the indication ci (taken from its listener). */
static void tl_refuse(struct tl_conind *ci, struct tl_notes *nt)
{
    struct tl_ep *c = ci->conn;

    c->listener = NULL;
    c->state = TS_IDLE;
    tl_note(nt, c, tl_discon_ind(ECONNREFUSED, -1));
    kmem_free(ci, sizeof(*ci));
}

/*
 * T_DISCON_REQ: a connector in TS_WCON_CREQ withdraws (the listener gets
 * T_DISCON_IND with the SEQ_number); a listener in TS_WRES_CIND refuses
 * SEQ_number (TBADSEQ if unknown; the connector gets T_DISCON_IND
 * ECONNREFUSED); a connected endpoint disconnects (the peer gets T_DISCON_IND
 * ECONNRESET).  TBADDATA: no disconnect data.  As TPI asks, M_FLUSH(FLUSHRW)
 * goes up before the T_OK_ACK, and what the write queue held is discarded --
 * except for a listener refusing one indication: its other indications,
 * queued upstream, must not be flushed away.
 */
void tl_discon_req(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr;
    struct T_discon_req dr;
    struct tl_conind *ci;
    struct tl_notes nt;
    int err = 0, flush = 1;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(dr)) {
        tl_error_ack(q, mp, T_DISCON_REQ, TSYSERR, EINVAL);
        return;
    }
    memcpy(&dr, mp->b_rptr, sizeof(dr));
    tl_notes_init(&nt);
    pthread_mutex_lock(&tl_lock);
    if (ep->state != TS_WCON_CREQ && ep->state != TS_WRES_CIND && !tl_connected(ep->state))
        err = TOUTSTATE;
    else if (msgdsize(mp->b_cont) > 0)
        err = TBADDATA;
    else if (ep->state == TS_WCON_CREQ) {
        tl_withdraw(ep, &nt);
        ep->state = TS_IDLE;
    } else if (ep->state == TS_WRES_CIND) {
        flush = 0; /* the other indications waiting upstream must stay */
        ci = tl_ind_take(ep, dr.SEQ_number);
        if (ci == NULL)
            err = TBADSEQ;
        else
            tl_refuse(ci, &nt);
    } else {
        tl_unlink(ep, &nt);
        ep->state = TS_IDLE;
    }
    pthread_mutex_unlock(&tl_lock);
    if (err != 0) {
        tl_error_ack(q, mp, T_DISCON_REQ, err, 0);
        return;
    }
    if (flush) {
        flushq(q, FLUSHDATA);
        putnextctl1(RD(q), M_FLUSH, FLUSHRW);
    }
    tl_ok_ack(q, mp, T_DISCON_REQ);
    tl_notes_deliver(&nt);
}

void tl_cots_close(struct tl_ep *ep, struct tl_notes *nt)
{
    struct tl_conind *ci;

    tl_withdraw(ep, nt);
    while ((ci = ep->ind) != NULL) {
        ep->ind = ci->next;
        tl_refuse(ci, nt);
    }
    ep->nind = 0;
    tl_unlink(ep, nt);
}

/*
 * Data primitives and M_DATA (prim -1), checked against the state: allowed in
 * TS_DATA_XFER and TS_WREQ_ORDREL (T_ORDREL_REQ: TS_DATA_XFER ->
 * TS_WIND_ORDREL, TS_WREQ_ORDREL -> TS_IDLE); discarded in TS_IDLE (a
 * disconnect may have crossed them, as TPI allows); M_ERROR(EPROTO) in any
 * other state or when malformed.  Queued for the service procedure.
 */
void tl_data_req(queue_t *q, mblk_t *mp, t_scalar_t prim)
{
    struct tl_ep *ep = q->q_ptr;
    size_t len = (size_t)(mp->b_wptr - mp->b_rptr);
    int bad = 0, drop = 0;

    switch (prim) {
    case T_DATA_REQ:
        bad = len < sizeof(struct T_data_req);
        break;
    case T_EXDATA_REQ:
        bad = len < sizeof(struct T_exdata_req);
        mp->b_band = 1;
        break;
    case T_OPTDATA_REQ: {
        struct T_optdata_req od;
        bad = len < sizeof(od);
        if (!bad) {
            memcpy(&od, mp->b_rptr, sizeof(od));
            bad = !tl_range_ok(mp, od.OPT_offset, od.OPT_length) ||
                  !tl_opts_ok(mp->b_rptr + od.OPT_offset, (size_t)od.OPT_length);
            if (od.DATA_flag & T_ODF_EX)
                mp->b_band = 1;
        }
        break;
    }
    case T_ORDREL_REQ:
        bad = len < sizeof(struct T_ordrel_req);
        break;
    default:
        break;
    }
    pthread_mutex_lock(&tl_lock);
    if (ep->state == TS_IDLE)
        drop = 1;
    else if (ep->state != TS_DATA_XFER && ep->state != TS_WREQ_ORDREL)
        bad = 1;
    else if (!bad && prim == T_ORDREL_REQ)
        ep->state = ep->state == TS_DATA_XFER ? TS_WIND_ORDREL : TS_IDLE;
    pthread_mutex_unlock(&tl_lock);
    if (bad && !drop)
        tl_merror(q, mp);
    else if (drop || !putq(q, mp))
        freemsg(mp);
}

/* Turn the *_REQ heading mp into its *_IND (in place, or in a copy of a shared
 * first block).  NULL when out of memory (mp is then untouched). */
static mblk_t *tl_to_ind(mblk_t *mp)
{
    t_scalar_t prim, ind;

    if (mp->b_datap->db_type == M_DATA)
        return mp;
    memcpy(&prim, mp->b_rptr, sizeof(prim));
    ind = prim == T_DATA_REQ     ? T_DATA_IND
          : prim == T_EXDATA_REQ ? T_EXDATA_IND
          : prim == T_OPTDATA_REQ ? T_OPTDATA_IND
                                  : T_ORDREL_IND;
    if (mp->b_datap->db_ref > 1) {
        mblk_t *nb = copyb(mp);
        if (nb == NULL)
            return NULL;
        nb->b_band = mp->b_band;
        nb->b_cont = mp->b_cont;
        mp->b_cont = NULL;
        freeb(mp);
        mp = nb;
    }
    mp->b_datap->db_type = M_PROTO;
    memcpy(mp->b_rptr, &ind, sizeof(ind));
    return mp;
}

/* Under tl_lock: the T_ORDREL_IND from ep reaches p. */
static void tl_ordrel_arrives(struct tl_ep *ep, struct tl_ep *p)
{
    if (p->state == TS_DATA_XFER)
        p->state = TS_WREQ_ORDREL;
    else if (p->state == TS_WIND_ORDREL)
        p->state = TS_IDLE;
    if (p->state == TS_IDLE && ep->state == TS_IDLE) {
        p->peer = NULL;
        ep->peer = NULL;
    }
}

/*
 * The write service procedure: forward queued data to the peer while its
 * read side has room in the message's band.  Not connected (any more): what
 * is queued is discarded.  The link is re-checked under tl_lock for each
 * message, so little crosses a disconnect.
 */
int tl_cots_wsrv(queue_t *q)
{
    struct tl_ep *ep = q->q_ptr, *p;
    mblk_t *mp, *ind;

    pthread_mutex_lock(&tl_lock);
    p = tl_hold_locked(ep->peer);
    pthread_mutex_unlock(&tl_lock);
    if (p == NULL) {
        flushq(q, FLUSHDATA);
        return 0;
    }
    while ((mp = getq(q)) != NULL) {
        int ordrel, gone;
        if (!bcanputnext(p->rq, mp->b_band)) {
            putbq(q, mp);
            break;
        }
        ind = tl_to_ind(mp);
        if (ind == NULL) {
            putbq(q, mp); /* out of memory: retried on the next enable */
            break;
        }
        ordrel = 0;
        if (ind->b_datap->db_type == M_PROTO) {
            t_scalar_t prim;
            memcpy(&prim, ind->b_rptr, sizeof(prim));
            ordrel = prim == T_ORDREL_IND;
        }
        pthread_mutex_lock(&tl_lock);
        gone = ep->peer != p;
        if (!gone && ordrel)
            tl_ordrel_arrives(ep, p);
        pthread_mutex_unlock(&tl_lock);
        if (gone) {
            freemsg(ind);
            flushq(q, FLUSHDATA);
            break;
        }
        putnext(p->rq, ind);
    }
    tl_rele(p);
    return 0;
}
