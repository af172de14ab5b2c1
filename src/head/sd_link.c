/* SPDX-License-Identifier: MIT */
/*
 * sd_link.c -- multiplexing: I_LINK, I_UNLINK, I_PLINK, I_PUNLINK.
 *
 * Principles of operation
 *   The controlling stream is an upper stream of a multiplexing driver (its
 *   streamtab has st_muxrinit and st_muxwinit).  Linking the lower stream
 *   under it (streamio(7)) does three things:
 *     1. the lower stream's head queue pair becomes the driver's lower queue
 *        pair: with its procedures off (qprocsoff), q_qinfo is switched to
 *        st_muxrinit/st_muxwinit, the water marks and packet sizes to theirs,
 *        the perimeters to the driver's MT level, q_ptr cleared for the
 *        driver, QHEAD taken off and QMUX put on, and the head_enable hooks
 *        removed (the queues are scheduled like any driver's); then
 *        qprocson.  Messages already waiting at the lower head are the
 *        driver's from then on, and so is one the lower driver sends up
 *        during the switch while they wait (it queues behind them, see
 *        ust_qhold); with nothing waiting, such a message passes through to
 *        the end of the stream and is discarded.  The same holds while an
 *        unlink switches back; a driver that answers an I_LINK after the ETIME
 *        keeps a queue it must not use (as in SVR4).  The stream is marked STPLEX, so its own
 *        descriptors fail read, write, getmsg, putmsg and every ioctl but the
 *        unlink family with EINVAL.
 *     2. an M_IOCTL I_LINK (I_PLINK) goes down the controlling stream with a
 *        struct linkblk: l_qtop the driver's upper write queue (NULL for
 *        I_PLINK, as in Solaris), l_qbot the lower write queue (the old head
 *        write queue), l_index a new multiplexer id (> 0, unique in the
 *        process).  An M_IOCACK completes the link; an M_IOCNAK (its error),
 *        or no answer within UST_IOCTIME_S (ETIME), undoes step 1.
 *     3. the link takes a reference (sd_refs) on the lower stream, so that it
 *        stays whole when its last descriptor is closed.
 *   Unlinking sends M_IOCTL I_UNLINK (I_PUNLINK) with the same linkblk; on
 *   the acknowledgement the lower head is restored (its queues flushed,
 *   qinits, marks, hooks and flags back, STPLEX off) and the reference is
 *   dropped, which tears the lower stream down if it was the last.
 *
 *   Ordinary links belong to their controlling stream: ust_sd_unlink_all
 *   unlinks them when it closes (before its driver's close runs).  There the
 *   unlink proceeds even if the driver refuses or does not answer, as in
 *   SVR4: the stream is going away.  Persistent links belong to the driver:
 *   they outlive the controlling stream and are unlinked with I_PUNLINK on
 *   any stream of the same driver.
 *
 *   Cycles are looked for between drivers, as Solaris does: each link is an
 *   edge from the controlling stream's driver to the lower stream's driver
 *   (a pipe end has none and so no edges out).  A new link from driver C to
 *   driver L is refused if L is C or C can be reached from L.  This also
 *   refuses a stream of a multiplexer linked under another stream of the
 *   same multiplexer.
 *
 *   A stream that is itself linked under a multiplexer cannot be a
 *   controlling stream: its head queues belong to the upper multiplexer, so
 *   the M_IOCACK of a link ioctl would not come back to it.  I_LINK,
 *   I_UNLINK... on it fail EINVAL; unlink it first.
 *
 *   The ioctls use the controlling stream's ioctl slot (sd_iocbusy), as I_STR
 *   does, with ids of their own (high bit set, so never one of sd_iocproto.c's
 *   recent ids).  Their waits are not interrupted by signals: giving up half
 *   way would leave the driver holding a queue the head took back.
 *
 * Locking
 *   link_serial serializes every link and unlink in the process and guards
 *   the list of links and the id counter.  It may be held while sleeping
 *   (for the driver's answer).  Order: link_serial > sd_plumb (of the
 *   controlling and the lower stream, in address order) > sd_lock > queue
 *   locks.
 *   A stream's last reference is never dropped with link_serial held (the
 *   teardown that follows may unlink, and take link_serial): references to
 *   give back are collected and released after it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sthead.h"

/* Executive internal (perim.c): set up the perimeters of a pair for MT
 * level flags of driver ent. */
void ust_perim_setup(struct ust_qpair *qp, uint_t flags, struct ust_modent *ent);

/* Flags of the head pair that a link changes (restored on unlink). */
#define LINK_QFLAGS (QHEAD | QMUX | QMTSAFE | QPAIR | QPERQ | QPERMOD | QMTOUTPERIM)

/* What the lower head's queue had before the link. */
struct qsave {
    struct qinit *qinfo;
    void (*head_enable)(queue_t *);
    size_t hiwat, lowat;
    ssize_t minpsz, maxpsz;
    uint_t flags; /* the LINK_QFLAGS bits */
};

/* One link. */
struct mlink {
    struct mlink *next;
    int muxid;                /* l_index */
    int persistent;           /* made by I_PLINK */
    struct stdata *ctl;       /* ordinary: the controlling stream; persistent: NULL */
    struct ust_modent *drv;   /* the multiplexing driver (a registry reference) */
    struct ust_modent *lodrv; /* the lower stream's driver (NULL for a pipe), for cycles */
    struct stdata *lower;     /* the linked stream (one sd_refs reference) */
    queue_t *qtop;            /* l_qtop as sent with the link */
    struct qsave save[2];     /* read, write queue of the lower head */
};

static ust_lock_t link_serial = UST_LOCK_INIT; /* see Locking above */
static struct mlink *links;                    /* link_serial: every link */
static int next_muxid;                         /* link_serial: last id given */
static atomic_uint link_ioc_ids;               /* ids of the link ioctls */

/* ------------------------------------------------------------------------ */
/* References                                                               */
/* ------------------------------------------------------------------------ */

/* Take a reference on a stream that still has one; 0 if it has none (it is
 * being closed). */
static int ref_hold(struct stdata *sd)
{
    int n = atomic_load(&sd->sd_refs);

    while (n > 0)
        if (atomic_compare_exchange_weak(&sd->sd_refs, &n, n + 1))
            return 1;
    return 0;
}

/* Give a reference back; the last one tears the stream down.  No lock held
 * (link_serial in particular). */
static void ref_rele(struct stdata *sd)
{
    if (atomic_fetch_sub(&sd->sd_refs, 1) == 1)
        ust_sd_teardown(sd);
}

/* ------------------------------------------------------------------------ */
/* Switching the lower head                                                  */
/* ------------------------------------------------------------------------ */

/*
 * lower_switch -- make the lower stream's head pair the driver's lower pair.
 *   Context: link_serial and lo->sd_plumb held; lo is STPLEX already.
 */
static void lower_switch(struct mlink *ml)
{
    struct stdata *lo = ml->lower;
    struct streamtab *st = ml->drv->str;
    struct qinit *qi[2] = {st->st_muxrinit, st->st_muxwinit};
    queue_t *pair[2] = {lo->sd_rq, lo->sd_wq};
    struct ust_qpair *qp = ust_qp(lo->sd_rq);
    uint_t mt = QMUX;

    if (ml->drv->flag & D_MP)
        mt |= QMTSAFE;
    if (ml->drv->flag & D_MTQPAIR)
        mt |= QPAIR;
    if (ml->drv->flag & D_MTPERQ)
        mt |= QPERQ;
    if (ml->drv->flag & D_MTPERMOD)
        mt |= QPERMOD;
    if (ml->drv->flag & D_MTOUTPERIM)
        mt |= QMTOUTPERIM;
    qprocsoff(lo->sd_rq);
    /* No deposit comes now (procedures off, then QHEAD off): what a pipe's
     * writer deposited joins the queue the multiplexer takes over. */
    ust_sd_absorb(lo);
    for (int i = 0; i < 2; i++) {
        queue_t *q = pair[i];
        struct ust_qpriv *pv = ust_qpv(q);
        struct qsave *sv = &ml->save[i];
        struct module_info *mi = qi[i]->qi_minfo;

        ust_lock(&pv->lock); /* queue lock: q_flag, marks */
        sv->qinfo = q->q_qinfo;
        sv->head_enable = __atomic_load_n(&pv->head_enable, __ATOMIC_RELAXED);
        sv->hiwat = q->q_hiwat;
        sv->lowat = q->q_lowat;
        sv->minpsz = q->q_minpsz;
        sv->maxpsz = q->q_maxpsz;
        sv->flags = ust_qflags(q) & LINK_QFLAGS;
        q->q_qinfo = qi[i];
        if (mi) {
            q->q_hiwat = mi->mi_hiwat;
            q->q_lowat = mi->mi_lowat;
            q->q_minpsz = mi->mi_minpsz;
            q->q_maxpsz = mi->mi_maxpsz;
        }
        q->q_ptr = NULL;
        __atomic_store_n(&pv->head_enable, NULL, __ATOMIC_RELAXED);
        ust_qflag_clr(q, LINK_QFLAGS);
        ust_qflag_set(q, mt);
        ust_unlock(&pv->lock);
    }
    ust_perim_setup(qp, ml->drv->flag, ml->drv);
    ust_reg_hold(ml->drv); /* the pair's entry, released in lower_restore */
    qp->ent = ml->drv;
    qprocson(lo->sd_rq);
}

/*
 * lower_restore -- give the lower stream its head back: procedures off,
 *   both queues flushed, everything lower_switch changed restored, STPLEX
 *   off.  Context: link_serial and lo->sd_plumb held.
 */
static void lower_restore(struct mlink *ml)
{
    struct stdata *lo = ml->lower;
    queue_t *pair[2] = {lo->sd_rq, lo->sd_wq};
    struct ust_qpair *qp = ust_qp(lo->sd_rq);

    qprocsoff(lo->sd_rq);
    for (int i = 0; i < 2; i++) {
        queue_t *q = pair[i];
        struct ust_qpriv *pv = ust_qpv(q);
        struct qsave *sv = &ml->save[i];

        flushq(q, FLUSHALL);
        ust_lock(&pv->lock); /* queue lock: q_flag, marks */
        q->q_qinfo = sv->qinfo;
        q->q_hiwat = sv->hiwat;
        q->q_lowat = sv->lowat;
        q->q_minpsz = sv->minpsz;
        q->q_maxpsz = sv->maxpsz;
        q->q_ptr = lo;
        __atomic_store_n(&pv->head_enable, sv->head_enable, __ATOMIC_RELAXED);
        ust_qflag_clr(q, LINK_QFLAGS);
        ust_qflag_set(q, sv->flags);
        ust_unlock(&pv->lock);
    }
    ust_perim_setup(qp, D_MP, NULL); /* the head's own MT level */
    qp->ent = NULL;
    ust_reg_rele(ml->drv);
    qprocson(lo->sd_rq);
    ust_lock(&lo->sd_lock);
    lo->sd_flag &= ~STPLEX;
    ust_sd_rready(lo);
    ust_unlock(&lo->sd_lock);
}

/* ------------------------------------------------------------------------ */
/* The link ioctls to the driver                                             */
/* ------------------------------------------------------------------------ */

/*
 * link_ioctl -- send M_IOCTL cmd with linkblk {qtop, qbot, muxid} down the
 *   controlling stream ctl and wait for the answer.
 *   Context: blocking; link_serial held (sd_plumb may be).  atclose: ctl is
 *   being torn down (STRCLOSE, nobody else inside): its errors and hang-up
 *   do not stop the ioctl.  Signals do not interrupt the waits.
 *   Returns 0 (M_IOCACK) or an errno: the M_IOCNAK's (EINVAL if none), ETIME
 *   (no answer within UST_IOCTIME_S), ENOSR (no memory), and unless atclose
 *   ENXIO (hung up before the ioctl was sent) or the M_ERROR error.
 */
static int link_ioctl(struct stdata *ctl, int cmd, queue_t *qtop, queue_t *qbot, int muxid,
                      int atclose)
{
    long long deadline = ust_now_ns() + UST_IOCTIME_S * 1000000000LL;
    struct linkblk lb;
    struct iocblk ioc;
    mblk_t *mp, *dp, *rp = NULL;
    uint_t id;
    int err = 0;

    mp = allocb(sizeof(union ioctypes), BPRI_HI);
    dp = allocb(sizeof(lb), BPRI_HI);
    if (mp == NULL || dp == NULL) {
        freemsg(mp);
        freemsg(dp);
        return ENOSR;
    }
    do
        id = 0x80000000u | (atomic_fetch_add(&link_ioc_ids, 1) + 1);
    while (id == 0x80000000u);
    memset(&lb, 0, sizeof(lb));
    lb.l_qtop = qtop;
    lb.l_qbot = qbot;
    lb.l_index = muxid;
    memcpy(dp->b_wptr, &lb, sizeof(lb));
    dp->b_wptr += sizeof(lb);
    memset(mp->b_rptr, 0, sizeof(union ioctypes));
    memset(&ioc, 0, sizeof(ioc));
    ioc.ioc_cmd = cmd;
    ioc.ioc_cr = &ctl->sd_cred;
    ioc.ioc_id = id;
    ioc.ioc_count = sizeof(lb);
    ioc.ioc_flag = IOC_NATIVE;
    memcpy(mp->b_rptr, &ioc, sizeof(ioc));
    mp->b_wptr = mp->b_rptr + sizeof(ioc);
    mp->b_datap->db_type = M_IOCTL;
    mp->b_cont = dp;

    /* Take the ioctl slot. */
    ust_lock(&ctl->sd_lock);
    for (;;) {
        if (!atclose)
            err = ust_sd_ioc_error(ctl); /* sd_state.c: errors, then hang-up */
        if (err || !ctl->sd_iocbusy)
            break;
        if (ust_sd_wait(ctl, &ctl->sd_iwait, deadline) == ETIME)
            err = ETIME;
    }
    if (!err) {
        ctl->sd_iocbusy = 1;
        ctl->sd_iocid = id;
        ctl->sd_iocblk = NULL;
    }
    ust_unlock(&ctl->sd_lock);
    if (err) {
        freemsg(mp);
        return err;
    }

    atomic_fetch_add(&ust_qpv(ctl->sd_wq)->active, 1); /* claim: send from the head */
    putnext(ctl->sd_wq, mp);
    ust_qrelease(ctl->sd_wq);

    /* Wait for the answer, then give the slot up. */
    ust_lock(&ctl->sd_lock);
    while ((rp = ctl->sd_iocblk) == NULL) {
        /* Not even a hang-up ends this wait: the driver below still
         * answers, and the unlink may itself hang up routed streams. */
        if (ust_sd_wait(ctl, &ctl->sd_iwait, deadline) == ETIME) {
            err = ETIME;
            break;
        }
    }
    ctl->sd_iocblk = NULL;
    ctl->sd_iocbusy = 0;
    ctl->sd_iocid = 0;
    ust_sd_wake(&ctl->sd_iwait);
    ust_unlock(&ctl->sd_lock);
    if (rp == NULL)
        return err;
    memcpy(&ioc, rp->b_rptr, sizeof(ioc));
    if (rp->b_datap->db_type == M_IOCACK)
        err = ioc.ioc_error;
    else if (rp->b_datap->db_type == M_IOCNAK)
        err = ioc.ioc_error ? ioc.ioc_error : EINVAL;
    else
        err = EPROTO; /* M_COPYIN/M_COPYOUT: not part of the link protocol */
    freemsg(rp);
    return err;
}

/* ------------------------------------------------------------------------ */
/* Checks                                                                    */
/* ------------------------------------------------------------------------ */

/* The driver of a controlling stream if it can multiplex (st_muxrinit and
 * st_muxwinit), else NULL.  Takes sd_lock. */
static struct ust_modent *mux_driver(struct stdata *sd)
{
    struct ust_modent *e;

    ust_lock(&sd->sd_lock);
    e = (sd->sd_flag & (STRPIPE | STRFIFO)) ? NULL : sd->sd_driver;
    ust_unlock(&sd->sd_lock);
    if (e == NULL || e->str == NULL || e->str->st_muxrinit == NULL || e->str->st_muxwinit == NULL)
        return NULL;
    return e;
}

/* The error that stops linking through or of stream sd now, 0 if none:
 * EINVAL linked or closing, the M_ERROR error, ENXIO hung up.  Takes sd_lock. */
static int stream_error(struct stdata *sd)
{
    int err = 0;

    ust_lock(&sd->sd_lock);
    if (sd->sd_flag & (STPLEX | STRCLOSE))
        err = EINVAL;
    else
        err = ust_sd_ioc_error(sd); /* sd_state.c */
    ust_unlock(&sd->sd_lock);
    return err;
}

/* Can driver `to` be reached from driver `from` along the links?  depth
 * bounds the search (the graph is acyclic, so the number of links does).
 * link_serial held. */
static int reaches(struct ust_modent *from, struct ust_modent *to, int depth)
{
    UST_ASSERT_HELD(&link_serial);
    if (from == NULL || depth < 0)
        return 0;
    if (from == to)
        return 1;
    for (struct mlink *ml = links; ml != NULL; ml = ml->next)
        if (ml->drv == from && reaches(ml->lodrv, to, depth - 1))
            return 1;
    return 0;
}

static int nlinks(void)
{
    int n = 0;

    UST_ASSERT_HELD(&link_serial);
    for (struct mlink *ml = links; ml != NULL; ml = ml->next)
        n++;
    return n;
}

/* A new multiplexer id: > 0, not in use.  link_serial held. */
static int new_muxid(void)
{
    UST_ASSERT_HELD(&link_serial);
    for (;;) {
        int used = 0;

        next_muxid = next_muxid >= 0x7fffffff || next_muxid < 0 ? 1 : next_muxid + 1;
        for (struct mlink *ml = links; ml != NULL && !used; ml = ml->next)
            used = ml->muxid == next_muxid;
        if (!used)
            return next_muxid;
    }
}

/* The driver's upper write queue of the controlling stream: the bottom of
 * its write side.  sd_plumb held. */
static queue_t *driver_wq(struct stdata *sd)
{
    queue_t *q = sd->sd_wq, *n;

    UST_ASSERT_HELD(&sd->sd_plumb);
    while ((n = ust_qnext(q)) != NULL)
        q = n;
    return q;
}

/* Take / drop the plumbing locks of the controlling and the lower stream.
 * Only link_serial's holder ever holds two, so any order would do; they are
 * taken in address order all the same (stream heads are reused, so the same
 * two locks can meet in either role), which keeps lock-order checkers quiet.
 * link_serial held. */
static void plumb_both(struct stdata *a, struct stdata *b)
{
    UST_ASSERT_HELD(&link_serial);
    if ((uintptr_t)a > (uintptr_t)b) {
        struct stdata *t = a;
        a = b;
        b = t;
    }
    ust_lock(&a->sd_plumb);
    ust_lock(&b->sd_plumb);
}

static void unplumb_both(struct stdata *a, struct stdata *b)
{
    ust_unlock(&a->sd_plumb);
    ust_unlock(&b->sd_plumb);
}

/* ------------------------------------------------------------------------ */
/* I_LINK, I_PLINK                                                           */
/* ------------------------------------------------------------------------ */

/*
 * ust_sd_link -- I_LINK (persistent 0) / I_PLINK (1): link the stream of
 *   descriptor fd under the multiplexing driver of controlling stream sd.
 *   Context: a system call on sd; blocking.  Takes link_serial, sd's and the
 *   lower stream's sd_plumb.
 *   Returns the multiplexer id (> 0), or -errno: EBADF (fd not open),
 *   EINVAL (sd's driver does not multiplex; sd is linked itself; fd is not a
 *   stream, is sd, is already linked, is being closed, or the link would
 *   make a cycle), ENXIO (sd or the lower stream hung up), the M_ERROR error
 *   of either, ENOSR/ENOMEM, ETIME (the driver did not answer), or the
 *   driver's M_IOCNAK error.
 */
int ust_sd_link(struct stdata *sd, int fd, int persistent)
{
    struct ust_modent *drv;
    struct stdata *lo;
    struct mlink *ml = NULL;
    int err, muxid = 0, held = 0;

    lo = ust_sd_get(fd, &err);
    if (lo == NULL)
        return err == EBADF ? -EBADF : -EINVAL;
    ust_lock(&link_serial);
    drv = mux_driver(sd);
    if (drv == NULL) {
        err = EINVAL;
        goto out;
    }
    err = stream_error(sd);
    if (err == 0 && lo == sd)
        err = EINVAL;
    if (err == 0)
        err = stream_error(lo);
    if (err != 0)
        goto out;
    ml = calloc(1, sizeof(*ml));
    if (ml == NULL) {
        err = ENOMEM;
        goto out;
    }
    ust_lock(&lo->sd_lock);
    ml->lodrv = (lo->sd_flag & (STRPIPE | STRFIFO)) ? NULL : lo->sd_driver;
    ust_unlock(&lo->sd_lock);
    if (ml->lodrv == drv || reaches(ml->lodrv, drv, nlinks() + 1)) {
        err = EINVAL; /* a cycle */
        goto out;
    }
    if (!ref_hold(lo)) {
        err = EINVAL; /* its last descriptor is being closed */
        goto out;
    }
    held = 1;
    ml->muxid = new_muxid();
    ml->persistent = persistent;
    ml->ctl = persistent ? NULL : sd;
    ml->drv = drv;
    ml->lower = lo;
    ust_reg_hold(drv);

    plumb_both(sd, lo);
    ust_lock(&lo->sd_lock);
    err = (lo->sd_flag & (STPLEX | STRCLOSE)) ? EINVAL : 0;
    if (!err)
        lo->sd_flag |= STPLEX;
    ust_unlock(&lo->sd_lock);
    if (!err) {
        /* Calls blocked on the lower stream leave (EINVAL); what it held
         * (SNDHOLD) goes down first. */
        ust_sd_wake(&lo->sd_rwait);
        ust_sd_wake(&lo->sd_wwait);
        ust_sd_wake(&lo->sd_iwait);
        ust_sd_flush_hold(lo);
        ml->qtop = persistent ? NULL : driver_wq(sd);
        lower_switch(ml);
        err = link_ioctl(sd, persistent ? I_PLINK : I_LINK, ml->qtop, lo->sd_wq, ml->muxid, 0);
        if (err)
            lower_restore(ml);
    }
    unplumb_both(sd, lo);
    if (err) {
        ust_reg_rele(drv);
        goto out;
    }
    ml->next = links;
    links = ml;
    muxid = ml->muxid;
    ml = NULL;
    held = 0; /* the link keeps the reference */
out:
    ust_unlock(&link_serial);
    free(ml);
    if (held)
        ref_rele(lo);
    ust_sd_put(lo);
    return err ? -err : muxid;
}

/* ------------------------------------------------------------------------ */
/* I_UNLINK, I_PUNLINK, close                                                */
/* ------------------------------------------------------------------------ */

/*
 * unlink_one -- unlink ml through controlling stream ctl: the driver's
 *   ioctl, then the lower head back.  On success ml is taken off the list
 *   and returned in *donep (the caller frees it and drops its reference after
 *   link_serial).  atclose: ctl is closing; the unlink is done whatever the
 *   driver answers.  Context: link_serial held; takes ctl's and the lower
 *   stream's sd_plumb.  Returns 0 or the ioctl's errno (not atclose).
 */
static int unlink_one(struct stdata *ctl, struct mlink *ml, int atclose)
{
    struct stdata *lo = ml->lower;
    int err;

    UST_ASSERT_HELD(&link_serial);
    plumb_both(ctl, lo);
    err = link_ioctl(ctl, ml->persistent ? I_PUNLINK : I_UNLINK, ml->qtop, lo->sd_wq, ml->muxid,
                     atclose);
    if (atclose)
        err = 0;
    if (!err)
        lower_restore(ml);
    unplumb_both(ctl, lo);
    if (!err) {
        for (struct mlink **pp = &links; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == ml) {
                *pp = ml->next;
                break;
            }
        }
        ml->next = NULL;
    }
    return err;
}

/* Free unlinked records and give their references back; no lock held. */
static void release_done(struct mlink *done)
{
    while (done != NULL) {
        struct mlink *n = done->next;

        ust_reg_rele(done->drv);
        ref_rele(done->lower);
        free(done);
        done = n;
    }
}

/* Does ml match an unlink request on sd (driver drv) of this kind? */
static int matches(const struct mlink *ml, struct stdata *sd, struct ust_modent *drv,
                   int persistent)
{
    if (persistent)
        return ml->persistent && ml->drv == drv;
    return !ml->persistent && ml->ctl == sd;
}

/*
 * ust_sd_unlink -- I_UNLINK (persistent 0) / I_PUNLINK (1) of multiplexer id
 *   muxid, or of every link of that kind (MUXID_ALL): for I_UNLINK the
 *   ordinary links made through sd, for I_PUNLINK the persistent links of
 *   sd's driver.
 *   Context: a system call on sd; blocking.  Takes link_serial.
 *   Returns 0 or -errno: EINVAL (sd's driver does not multiplex, sd is
 *   linked itself, muxid is not one of the links of that kind -- an
 *   ordinary link's id with I_PUNLINK, a persistent one's with I_UNLINK, or
 *   a link made through another stream), ENXIO (sd hung up), the M_ERROR
 *   error, ETIME, the driver's M_IOCNAK error.  With MUXID_ALL the links
 *   unlinked before an error stay unlinked; none at all is not an error.
 */
int ust_sd_unlink(struct stdata *sd, int muxid, int persistent)
{
    struct ust_modent *drv;
    struct mlink *done = NULL;
    int err, found = 0;

    ust_lock(&link_serial);
    drv = mux_driver(sd);
    err = drv == NULL ? EINVAL : stream_error(sd);
    if (err == 0 && muxid <= 0 && muxid != MUXID_ALL)
        err = EINVAL;
    for (struct mlink *ml = links, *next; err == 0 && ml != NULL; ml = next) {
        next = ml->next;
        if (muxid != MUXID_ALL && ml->muxid != muxid)
            continue;
        if (!matches(ml, sd, drv, persistent)) {
            if (muxid == MUXID_ALL)
                continue;
            err = EINVAL;
            break;
        }
        found = 1;
        err = unlink_one(sd, ml, 0);
        if (err == 0) {
            ml->next = done;
            done = ml;
        }
    }
    if (err == 0 && !found && muxid != MUXID_ALL)
        err = EINVAL;
    ust_unlock(&link_serial);
    release_done(done);
    return -err;
}

/*
 * ust_sd_unlink_all -- the controlling stream sd is closing: unlink every
 *   ordinary link made through it, whatever its driver answers.
 *   Context: ust_sd_teardown, after the calls inside sd have left and
 *   before sd_plumb is taken and the driver closed; blocking.
 */
void ust_sd_unlink_all(struct stdata *sd)
{
    struct mlink *done = NULL;
    int again = 1;

    ust_lock(&link_serial);
    while (again) {
        again = 0;
        for (struct mlink *ml = links; ml != NULL; ml = ml->next) {
            if (!ml->persistent && ml->ctl == sd) {
                unlink_one(sd, ml, 1);
                ml->next = done;
                done = ml;
                again = 1;
                break;
            }
        }
    }
    ust_unlock(&link_serial);
    release_done(done);
}

/*
 * ust_sd_plex_ioctl -- the answer of ioctl cmd on a stream linked under a
 *   multiplexer: -EINVAL for everything but the unlink family, which goes
 *   on to ust_sd_unlink (streamio(7)); 0 when sd is not linked.
 *   Context: any; takes sd_lock.
 */
int ust_sd_plex_ioctl(struct stdata *sd, unsigned long cmd)
{
    int plex;

    if (cmd == I_UNLINK || cmd == I_PUNLINK)
        return 0;
    ust_lock(&sd->sd_lock);
    plex = (sd->sd_flag & STPLEX) != 0;
    ust_unlock(&sd->sd_lock);
    return plex ? -EINVAL : 0;
}

/*
 * ust_sd_link_fork_child -- fork() child (sd_fork.c).  link_serial is held
 *   across waits for sd_plumb and for the driver's answer, so it is never
 *   taken by the fork prepare hook (a link could wait for the thread that
 *   forks); the child re-initialises it.  The links it guards join the
 *   parent's streams, which the child never drives: the list is forgotten, not
 *   walked (it may have been mid-update), and its records stay with the
 *   parent's memory image like the streams they join.
 */
void ust_sd_link_fork_child(void)
{
    ust_lock_init(&link_serial);
    links = NULL;
}
