/* SPDX-License-Identifier: MIT */
/*
 * tl_clts.c -- ticlts: unit data.  Locking and claims: tl.h.
 *
 * T_UNITDATA_REQ is checked in the put procedure (M_ERROR(EPROTO) when
 * shorter than its structure, its DEST or OPT area outside the message, or
 * the endpoint not in TS_IDLE) and queued.  The write service procedure
 * looks the destination up for each message:
 *   - DEST_length 0 or beyond ADDR_size, or a malformed option list:
 *     T_UDERROR_IND with ERROR_type EINVAL;
 *   - more than TSDU_size (65536) bytes of data: T_UDERROR_IND EMSGSIZE;
 *   - no endpoint bound to DEST: T_UDERROR_IND ECONNREFUSED (as Solaris tl);
 *   - the destination's stream head is full: the message goes back on our
 *     queue and we wait (nothing is lost).  The sender records the
 *     destination it waits on (cwait) before it tests canputnext, so the
 *     destination's read service procedure, back-enabled when its reader
 *     drains, cannot miss it: it qenables every endpoint waiting on it
 *     (tl_clts_wake).  A destination that unbinds or closes wakes its waiters
 *     too; they then get T_UDERROR_IND.
 *   - else T_UNITDATA_IND (SRC: the sender's address; options are not
 *     passed on) up the destination's read side, the data blocks unchanged.
 */
#include <errno.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/stream.h>

#include "tl.h"

void tl_unitdata_req(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr;
    struct T_unitdata_req ur;
    int state;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(ur)) {
        tl_merror(q, mp);
        return;
    }
    memcpy(&ur, mp->b_rptr, sizeof(ur));
    pthread_mutex_lock(&tl_lock);
    state = ep->state;
    pthread_mutex_unlock(&tl_lock);
    if (state != TS_IDLE || !tl_range_ok(mp, ur.DEST_offset, ur.DEST_length) ||
        !tl_range_ok(mp, ur.OPT_offset, ur.OPT_length)) {
        tl_merror(q, mp);
        return;
    }
    if (!putq(q, mp))
        freemsg(mp);
}

void tl_clts_wake(struct tl_ep *ep, int closing)
{
    for (struct tl_ep *e = tl_eps; e != NULL; e = e->next) {
        if (e->cwait != ep)
            continue;
        if (closing)
            e->cwait = NULL;
        if (!e->closing)
            qenable(WR(e->rq));
    }
}

/* T_UDERROR_IND for the T_UNITDATA_REQ mp (whose DEST area is valid) up our
 * read side; mp is consumed. */
static void tl_uderror(queue_t *q, mblk_t *mp, t_scalar_t error)
{
    struct T_unitdata_req ur;
    struct T_uderror_ind *ue;
    mblk_t *bp;

    memcpy(&ur, mp->b_rptr, sizeof(ur));
    if (ur.DEST_length > TL_ADDR_MAX)
        ur.DEST_length = 0;
    bp = tl_prim(NULL, M_PROTO, sizeof(*ue), (size_t)ur.DEST_length);
    if (bp != NULL) {
        ue = (struct T_uderror_ind *)(void *)bp->b_rptr;
        ue->PRIM_type = T_UDERROR_IND;
        ue->DEST_length = ur.DEST_length;
        ue->DEST_offset = tl_append(bp, mp->b_rptr + ur.DEST_offset, (size_t)ur.DEST_length);
        ue->ERROR_type = error;
        qreply(q, bp);
    }
    freemsg(mp);
}

/* Forward one T_UNITDATA_REQ; 0 done, 1 flow-controlled (mp put back). */
static int tl_unitdata_one(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr, *d;
    struct T_unitdata_req ur;
    struct T_unitdata_ind *ui;
    mblk_t *bp;

    memcpy(&ur, mp->b_rptr, sizeof(ur));
    if (ur.DEST_length <= 0 || ur.DEST_length > TL_ADDR_MAX ||
        !tl_opts_ok(mp->b_rptr + ur.OPT_offset, (size_t)ur.OPT_length)) {
        tl_uderror(q, mp, EINVAL);
        return 0;
    }
    if (msgdsize(mp->b_cont) > TL_TIDU) {
        tl_uderror(q, mp, EMSGSIZE);
        return 0;
    }
    bp = tl_prim(NULL, M_PROTO, sizeof(*ui), TL_ADDR_MAX);
    if (bp == NULL) {
        putbq(q, mp); /* out of memory: retried on the next enable */
        return 1;
    }
    pthread_mutex_lock(&tl_lock);
    d = tl_hold_locked(
        tl_find_addr(ep->dev, mp->b_rptr + ur.DEST_offset, (size_t)ur.DEST_length));
    ep->cwait = d;
    ui = (struct T_unitdata_ind *)(void *)bp->b_rptr;
    ui->PRIM_type = T_UNITDATA_IND;
    ui->SRC_length = (t_scalar_t)ep->alen;
    ui->SRC_offset = tl_append(bp, ep->addr, ep->alen);
    pthread_mutex_unlock(&tl_lock);
    if (d == NULL) {
        freemsg(bp);
        tl_uderror(q, mp, ECONNREFUSED);
        return 0;
    }
    if (!canputnext(d->rq)) {
        freemsg(bp);
        putbq(q, mp);
        tl_rele(d);
        return 1;
    }
    bp->b_cont = mp->b_cont;
    mp->b_cont = NULL;
    freeb(mp);
    putnext(d->rq, bp);
    tl_rele(d);
    return 0;
}

int tl_clts_wsrv(queue_t *q)
{
    mblk_t *mp;

    while ((mp = getq(q)) != NULL) {
        if (mp->b_datap->db_type != M_PROTO && mp->b_datap->db_type != M_PCPROTO) {
            freemsg(mp);
            continue;
        }
        if (tl_unitdata_one(q, mp))
            break;
    }
    return 0;
}
