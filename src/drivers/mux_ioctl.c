/* SPDX-License-Identifier: MIT */
/*
 * mux_ioctl.c -- the control side of the mux driver (mux.c): the ioctls that
 * come down an upper stream, which link, unlink and route lower streams.
 *
 * Principles of operation
 * -----------------------
 * I_LINK and I_PLINK (sent by the stream head, with a linkblk) record the
 * lower stream by its multiplexer id and lower write queue; an id or a queue
 * already linked is refused.  I_UNLINK and I_PUNLINK unlist the record under
 * mux_lock, so no procedure finds the lower queue from then on (mux.c, "MT
 * level"), remove the routes of the upper streams routed to it while holding
 * them busy, cancel a pending read retry, and then, without the lock, send
 * each of them an M_HANGUP and flush what they still had to write.  MUX_ROUTE
 * (an I_STR with an int: a multiplexer id, or 0 for none) sets the route of
 * the upper stream it came down; a lower stream that hung up is refused with
 * ENXIO.  Routing enables the queues whose messages waited for a route.
 * Anything else is refused with EINVAL.  Every ioctl is answered (miocack,
 * miocnak) on the upper stream's read side.
 *
 * Locks: mux_lock (mux.c) around every look at the tables; never held across
 * putnext or the ack.
 */
#include <errno.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/mux.h>
#include <sys/stream.h>
#include <stropts.h>

#include "mux_impl.h"

/* The linkblk of an I_LINK family M_IOCTL into *lb; 0 or EINVAL. */
static int get_linkblk(mblk_t *mp, struct linkblk *lb)
{
    mblk_t *dp = mp->b_cont;

    if (dp == NULL || dp->b_wptr - dp->b_rptr < (ptrdiff_t)sizeof(*lb))
        return EINVAL;
    memcpy(lb, dp->b_rptr, sizeof(*lb));
    return 0;
}

/* I_LINK / I_PLINK: record the lower stream.  0 or errno. */
static int mux_link(mblk_t *mp, int persistent)
{
    struct linkblk lb;
    struct mux_lower *l;
    int err = get_linkblk(mp, &lb);

    if (err == 0 && (lb.l_index <= 0 || lb.l_qbot == NULL))
        err = EINVAL;
    if (err != 0)
        return err;
    l = kmem_zalloc(sizeof(*l), KM_NOSLEEP);
    if (l == NULL)
        return ENOMEM;
    l->muxid = lb.l_index;
    l->wq = lb.l_qbot;
    l->persistent = persistent;
    pthread_mutex_lock(&mux_lock);
    if (lower_by_id(l->muxid) != NULL || lower_by_wq(l->wq) != NULL) {
        err = EINVAL;
    } else {
        l->next = mux_lowers;
        mux_lowers = l;
    }
    pthread_mutex_unlock(&mux_lock);
    if (err != 0)
        kmem_free(l, sizeof(*l));
    return err;
}

/* I_UNLINK / I_PUNLINK: forget the lower stream; its routed upper streams
 * get M_HANGUP.  0 or errno (EINVAL: not linked here). */
static int mux_unlink(mblk_t *mp)
{
    struct linkblk lb;
    struct mux_lower *l;
    struct mux_ulist ul;
    mblk_t *hup;
    timeout_id_t retry = 0;
    int err = get_linkblk(mp, &lb);

    if (err != 0)
        return err;
    pthread_mutex_lock(&mux_lock);
    l = lower_by_id(lb.l_index);
    if (l == NULL || l->wq != lb.l_qbot) {
        pthread_mutex_unlock(&mux_lock);
        return EINVAL;
    }
    for (struct mux_lower **pp = &mux_lowers; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    mux_ulist_get(&ul, l, 1); /* no upper stream writes into it from now on */
    retry = l->retry;
    l->retry = 0;
    pthread_mutex_unlock(&mux_lock);
    if (retry != 0)
        quntimeout(RD(l->wq), retry);
    hup = allocb(0, BPRI_HI);
    if (hup != NULL)
        hup->b_datap->db_type = M_HANGUP;
    if (hup != NULL && (ul.n == 0 || mux_ulist_copies(&ul, hup) != 0))
        freemsg(hup);
    mux_ulist_send(&ul, 1);
    mux_ulist_put(&ul);
    kmem_free(l, sizeof(*l));
    return 0;
}

/* MUX_ROUTE on upper write queue q: route to the lower stream with the id
 * given (0: no route).  0 or errno. */
static int mux_route(queue_t *q, mblk_t *mp)
{
    struct iocblk *ioc = (struct iocblk *)(void *)mp->b_rptr;
    struct mux_upper *u = q->q_ptr;
    struct mux_lower *l = NULL, *old;
    mblk_t *dp = mp->b_cont;
    int id, err = 0;

    if (ioc->ioc_count != sizeof(int) || dp == NULL ||
        dp->b_wptr - dp->b_rptr < (ptrdiff_t)sizeof(int))
        return EINVAL;
    memcpy(&id, dp->b_rptr, sizeof(id));
    pthread_mutex_lock(&mux_lock);
    if (id != 0) {
        l = lower_by_id(id);
        if (l == NULL)
            err = EINVAL;
        else if (l->hungup)
            err = ENXIO;
    }
    if (err == 0) {
        old = u->route;
        u->route = l;
        u->wblocked = 0;
        if (old != NULL && old != l && old->rblocked) {
            old->rblocked = 0;
            qenable(RD(old->wq));
        }
        if (l != NULL)
            qenable(RD(l->wq)); /* what waited for a route goes up */
        qenable(q);             /* what was written before goes down */
    }
    pthread_mutex_unlock(&mux_lock);
    return err;
}

/* mux_ioctl -- see mux_impl.h. */
void mux_ioctl(queue_t *q, mblk_t *mp)
{
    struct iocblk *ioc;
    int err;

    if (mp->b_wptr - mp->b_rptr < (ptrdiff_t)sizeof(*ioc)) {
        freemsg(mp);
        return;
    }
    ioc = (struct iocblk *)(void *)mp->b_rptr;
    switch (ioc->ioc_cmd) {
    case I_LINK:
    case I_PLINK:
        err = mux_link(mp, ioc->ioc_cmd == I_PLINK);
        break;
    case I_UNLINK:
    case I_PUNLINK:
        err = mux_unlink(mp);
        break;
    case MUX_ROUTE:
        err = mux_route(q, mp);
        break;
    default:
        err = EINVAL;
        break;
    }
    if (err != 0) {
        miocnak(q, mp, 0, err);
        return;
    }
    freemsg(mp->b_cont);
    mp->b_cont = NULL;
    miocack(q, mp, 0, 0);
}
