/* SPDX-License-Identifier: MIT */
/*
 * sd_iocproto.c -- the downstream ioctl protocol: building and sending
 * M_IOCTL, waiting for the reply (M_IOCACK/M_IOCNAK), I_STR, the transparent
 * M_COPYIN/M_COPYOUT/M_IOCDATA loop, and the one-ioctl-at-a-time slot.  The
 * dispatcher and the requests done at the head are in sd_ioctl.c.
 *
 * Principles of operation
 *   Downstream ioctls (I_STR and transparent ones) go one at a time per
 *   stream: the caller takes the slot (sd_iocbusy, waiting on sd_iwait),
 *   sends an M_IOCTL with a fresh ioc_id and waits for the reply, which the
 *   read put procedure (sd_rput.c, ust_sd_ioc_reply) files in sd_iocblk only
 *   if it carries that id.  A timeout, a signal, a hang-up or an error ends
 *   the wait; the slot is then given up and its id forgotten, so a late reply
 *   is freed on arrival.  M_COPYIN and M_COPYOUT are served with ust_copyin
 *   and ust_copyout and answered with M_IOCDATA; a failed copy is answered
 *   with a non-zero cp_rval, after which the module gives up the ioctl without
 *   replying and the call fails EFAULT.  I_STR waits ic_timout seconds for
 *   each reply (0: UST_IOCTIME_S, -1: forever), a transparent ioctl
 *   UST_IOCTIME_S.
 *
 * Locking
 *   sd_lock guards the ioctl slot (sd_iocbusy, sd_iocid, sd_iocblk).  No lock
 *   is held across putnext or a wait.
 */
#include <errno.h>
#include <string.h>

#include "sthead.h"

static atomic_uint ioc_ids; /* source of ioc_id values (never 0) */

static size_t blen(const mblk_t *mp)
{
    return mp->b_wptr > mp->b_rptr ? (size_t)(mp->b_wptr - mp->b_rptr) : 0;
}

/* Send mp down from the head under a claim on its write queue. */
void ust_sd_ioc_send(struct stdata *sd, mblk_t *mp)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    putnext(wq, mp);
    ust_qrelease(wq);
}

/* ------------------------------------------------------------------------ */
/* The downstream ioctl protocol                                            */
/* ------------------------------------------------------------------------ */

/* One ioctl on its way: id, deadline policy, the caller's credentials. */
struct ioc_call {
    uint_t id;
    long long timeout_ns; /* per reply; 0: forever */
    long long deadline;   /* absolute, 0: forever */
};

static void ioc_rearm(struct ioc_call *c)
{
    c->deadline = c->timeout_ns ? ust_now_ns() + c->timeout_ns : 0;
}

/* A block of size bytes for an ioctl message; waits for memory (a bufcall
 * retry each tick) until the deadline.  NULL with *errp (ETIME, EINTR). */
static void ioc_bufwake(void *arg)
{
    ust_sd_wake(&((struct stdata *)arg)->sd_iwait);
}

static mblk_t *ioc_allocb(struct stdata *sd, size_t size, const struct ioc_call *c, int *errp)
{
    for (;;) {
        mblk_t *mp = allocb(size, BPRI_MED);
        if (mp)
            return mp;
        ust_lock(&sd->sd_lock);
        unsigned seq = ust_sd_wait_seq(&sd->sd_iwait);
        bufcall_id_t id = bufcall(size, BPRI_MED, ioc_bufwake, sd);
        long long dl = ust_now_ns() + 1000000000LL / HZ;
        if (c->deadline && c->deadline < dl)
            dl = c->deadline;
        int err = ust_sd_ioc_error(sd);
        if (!err)
            err = ust_sd_wait_from(sd, &sd->sd_iwait, seq, dl);
        ust_unlock(&sd->sd_lock);
        unbufcall(id);
        if (err == ETIME && (!c->deadline || ust_now_ns() < c->deadline))
            err = 0;
        if (err) {
            *errp = err;
            return NULL;
        }
    }
}

/* Take the stream's ioctl slot for c (waiting for it until c's deadline).
 * 0, ETIME, EINTR, or an error of ust_sd_ioc_error. */
static int ioc_slot_get(struct stdata *sd, struct ioc_call *c)
{
    int err;
    ust_lock(&sd->sd_lock);
    for (;;) {
        err = ust_sd_ioc_error(sd);
        if (err || !sd->sd_iocbusy)
            break;
        err = ust_sd_wait(sd, &sd->sd_iwait, c->deadline);
        if (err)
            break;
    }
    if (!err) {
        do
            c->id = atomic_fetch_add(&ioc_ids, 1) + 1;
        while (c->id == 0);
        sd->sd_iocbusy = 1;
        sd->sd_iocid = c->id;
        sd->sd_iocblk = NULL;
    }
    ust_unlock(&sd->sd_lock);
    return err;
}

/* Give the slot up; a reply filed meanwhile is freed. */
static void ioc_slot_put(struct stdata *sd)
{
    ust_lock(&sd->sd_lock);
    mblk_t *late = sd->sd_iocblk;
    sd->sd_iocblk = NULL;
    sd->sd_iocbusy = 0;
    sd->sd_iocid = 0;
    ust_sd_wake(&sd->sd_iwait);
    ust_unlock(&sd->sd_lock);
    freemsg(late);
}

/* Wait for the next reply to c.  0 with *mpp, or ETIME, EINTR, an error. */
static int ioc_wait_reply(struct stdata *sd, const struct ioc_call *c, mblk_t **mpp)
{
    int err = 0;
    ust_lock(&sd->sd_lock);
    for (;;) {
        if (sd->sd_iocblk) {
            *mpp = sd->sd_iocblk;
            sd->sd_iocblk = NULL;
            break;
        }
        err = ust_sd_ioc_error(sd);
        if (err)
            break;
        err = ust_sd_wait(sd, &sd->sd_iwait, c->deadline);
        if (err)
            break;
    }
    ust_unlock(&sd->sd_lock);
    return err;
}

/* Turn the copy request mp into an M_IOCDATA answering it: rval 0 with the
 * data dp (may be NULL), or a failure (rval non-zero, dp freed).  Reuses mp's
 * leading block when it has room, else a new block; NULL if none. */
static mblk_t *ioc_iocdata(mblk_t *mp, int rval, mblk_t *dp)
{
    struct copyreq cq;
    struct copyresp cp;
    memcpy(&cq, mp->b_rptr, sizeof(cq));
    memset(&cp, 0, sizeof(cp));
    cp.cp_cmd = cq.cq_cmd;
    cp.cp_cr = cq.cq_cr;
    cp.cp_id = cq.cq_id;
    cp.cp_rval = (caddr_t)(intptr_t)rval;
    cp.cp_private = cq.cq_private;
    cp.cp_flag = cq.cq_flag;
    if ((size_t)(mp->b_datap->db_lim - mp->b_rptr) < sizeof(cp) || mp->b_datap->db_ref > 1) {
        mblk_t *nmp = allocb(sizeof(union ioctypes), BPRI_HI);
        freemsg(mp);
        if (!nmp) {
            freemsg(dp);
            return NULL;
        }
        mp = nmp;
    } else {
        freemsg(mp->b_cont);
    }
    mp->b_cont = rval ? NULL : dp;
    if (rval)
        freemsg(dp);
    memcpy(mp->b_rptr, &cp, sizeof(cp));
    mp->b_wptr = mp->b_rptr + sizeof(cp);
    mp->b_datap->db_type = M_IOCDATA;
    return mp;
}

/* Serve an M_COPYIN: copy cq_size bytes from cq_addr and send M_IOCDATA.
 * Returns 0 (the ioctl goes on) or the error the ioctl fails with. */
static int ioc_copyin(struct stdata *sd, mblk_t *mp, const struct ioc_call *c)
{
    struct copyreq cq;
    mblk_t *dp = NULL;
    int err = 0;
    memcpy(&cq, mp->b_rptr, sizeof(cq));
    if (cq.cq_size > UST_STRMSGSZ) {
        err = EINVAL;
    } else if (cq.cq_size > 0) {
        dp = ioc_allocb(sd, cq.cq_size, c, &err);
        if (dp && ust_copyin(cq.cq_addr, dp->b_wptr, cq.cq_size) != 0)
            err = EFAULT;
        else if (dp)
            dp->b_wptr += cq.cq_size;
    }
    mp = ioc_iocdata(mp, err, dp);
    if (mp)
        ust_sd_ioc_send(sd, mp);
    else if (!err)
        err = ENOSR; /* could not answer: the module is left waiting */
    return err;
}

/* Serve an M_COPYOUT: copy the data (at most cq_size bytes) to cq_addr and
 * send M_IOCDATA.  Returns 0 or the error the ioctl fails with. */
static int ioc_copyout(struct stdata *sd, mblk_t *mp)
{
    struct copyreq cq;
    int err = 0;
    memcpy(&cq, mp->b_rptr, sizeof(cq));
    size_t done = 0;
    for (mblk_t *bp = mp->b_cont; bp && done < cq.cq_size; bp = bp->b_cont) {
        size_t n = blen(bp) < cq.cq_size - done ? blen(bp) : cq.cq_size - done;
        if (n && ust_copyout(bp->b_rptr, cq.cq_addr + done, n) != 0) {
            err = EFAULT;
            break;
        }
        done += n;
    }
    mp = ioc_iocdata(mp, err, NULL);
    if (mp)
        ust_sd_ioc_send(sd, mp);
    else if (!err)
        err = ENOSR;
    return err;
}

/*
 * ioc_run -- send the M_IOCTL mp (its id is c->id, the slot is held) and run
 *   the protocol to its end.  On M_IOCACK *ackp receives the reply (the caller
 *   frees it); the slot is given up in every case.
 *   Returns 0 (acknowledged) or an errno: the M_IOCNAK's error (EINVAL if 0),
 *   a non-zero ioc_error of an M_IOCACK, EFAULT (a copy failed), ETIME,
 *   EINTR, or a stream error.
 */
static int ioc_run(struct stdata *sd, struct ioc_call *c, mblk_t *mp, mblk_t **ackp)
{
    int err;
    ust_sd_ioc_send(sd, mp);
    for (;;) {
        mblk_t *rp = NULL;
        err = ioc_wait_reply(sd, c, &rp);
        if (err)
            break;
        struct iocblk ioc;
        switch (rp->b_datap->db_type) {
        case M_IOCACK:
            memcpy(&ioc, rp->b_rptr, sizeof(ioc));
            if (ioc.ioc_error) {
                err = ioc.ioc_error;
                freemsg(rp);
            } else {
                *ackp = rp;
            }
            goto done;
        case M_IOCNAK:
            memcpy(&ioc, rp->b_rptr, sizeof(ioc));
            err = ioc.ioc_error ? ioc.ioc_error : EINVAL;
            freemsg(rp);
            goto done;
        case M_COPYIN:
            err = ioc_copyin(sd, rp, c);
            break;
        case M_COPYOUT:
            err = ioc_copyout(sd, rp);
            break;
        default:
            freemsg(rp);
            err = EPROTO;
            break;
        }
        if (err)
            break;
        ioc_rearm(c);
    }
done:
    ioc_slot_put(sd);
    return err;
}

/* The leading block of an M_IOCTL: room for any of union ioctypes. */
static mblk_t *ioc_msg(struct stdata *sd, const struct ioc_call *c, int cmd, size_t count,
                       int *errp)
{
    mblk_t *mp = ioc_allocb(sd, sizeof(union ioctypes), c, errp);
    if (!mp)
        return NULL;
    struct iocblk ioc;
    memset(mp->b_rptr, 0, sizeof(union ioctypes));
    memset(&ioc, 0, sizeof(ioc));
    ioc.ioc_cmd = cmd;
    ioc.ioc_cr = &sd->sd_cred; /* lives as long as the stream */
    ioc.ioc_id = c->id;
    ioc.ioc_count = count;
    ioc.ioc_flag = IOC_NATIVE;
    memcpy(mp->b_rptr, &ioc, sizeof(ioc));
    mp->b_wptr = mp->b_rptr + sizeof(ioc);
    mp->b_datap->db_type = M_IOCTL;
    return mp;
}

/*
 * ust_sd_i_str -- I_STR: the strioctl's command and data down as an M_IOCTL;
 *   on M_IOCACK the reply data (ioc_count bytes, as SVR4 copies them: the
 *   buffer must be large enough) goes back to ic_dp and ic_len is set to its
 *   length.  Returns ioc_rval (>= 0) or -errno: EINVAL (ic_len outside
 *   0..UST_STRMSGSZ, ic_timout below -1, a negative ioc_rval), EFAULT, ETIME,
 *   EINTR, ENXIO, the M_ERROR error, the M_IOCNAK's error.
 */
int ust_sd_i_str(struct stdata *sd, void *arg)
{
    struct strioctl si;
    struct ioc_call c = {0};
    mblk_t *dp = NULL, *mp, *ack = NULL;
    int err;

    if (ust_copyin(arg, &si, sizeof(si)) != 0)
        return -EFAULT;
    if (si.ic_len < 0 || si.ic_len > UST_STRMSGSZ || si.ic_timout < -1)
        return -EINVAL;
    c.timeout_ns = si.ic_timout == -1
                       ? 0
                       : (long long)(si.ic_timout ? si.ic_timout : UST_IOCTIME_S) * 1000000000LL;
    ioc_rearm(&c);
    if (si.ic_len > 0) {
        dp = ioc_allocb(sd, (size_t)si.ic_len, &c, &err);
        if (!dp)
            return -err;
        if (ust_copyin(si.ic_dp, dp->b_wptr, (size_t)si.ic_len) != 0) {
            freemsg(dp);
            return -EFAULT;
        }
        dp->b_wptr += si.ic_len;
    }
    err = ioc_slot_get(sd, &c);
    if (err) {
        freemsg(dp);
        return -err;
    }
    mp = ioc_msg(sd, &c, si.ic_cmd, (size_t)si.ic_len, &err);
    if (!mp) {
        freemsg(dp);
        ioc_slot_put(sd);
        return -err;
    }
    mp->b_cont = dp;
    err = ioc_run(sd, &c, mp, &ack);
    if (err)
        return -err;
    struct iocblk ioc;
    memcpy(&ioc, ack->b_rptr, sizeof(ioc));
    size_t want = ioc.ioc_count, got = 0;
    for (mblk_t *bp = ack->b_cont; bp && got < want; bp = bp->b_cont) {
        size_t n = blen(bp) < want - got ? blen(bp) : want - got;
        if (n && ust_copyout(bp->b_rptr, si.ic_dp + got, n) != 0) {
            err = EFAULT;
            break;
        }
        got += n;
    }
    freemsg(ack);
    si.ic_len = (int)got;
    if (!err && ust_copyout(&si.ic_len, &((struct strioctl *)arg)->ic_len, sizeof(si.ic_len)) != 0)
        err = EFAULT;
    if (err)
        return -err;
    return ioc.ioc_rval < 0 ? -EINVAL : ioc.ioc_rval;
}

/*
 * ust_sd_ioc_transparent -- a request the head does not know: a TRANSPARENT
 *   M_IOCTL carrying arg itself in b_cont, served with M_COPYIN/M_COPYOUT
 *   until acknowledged.  Returns ioc_rval (>= 0) or -errno as ust_sd_i_str.
 */
int ust_sd_ioc_transparent(struct stdata *sd, unsigned long cmd, void *arg)
{
    struct ioc_call c = {0};
    mblk_t *mp, *dp, *ack = NULL;
    int err;

    c.timeout_ns = (long long)UST_IOCTIME_S * 1000000000LL;
    ioc_rearm(&c);
    dp = ioc_allocb(sd, sizeof(caddr_t), &c, &err);
    if (!dp)
        return -err;
    caddr_t a = arg;
    memcpy(dp->b_wptr, &a, sizeof(a));
    dp->b_wptr += sizeof(a);
    err = ioc_slot_get(sd, &c);
    if (err) {
        freemsg(dp);
        return -err;
    }
    mp = ioc_msg(sd, &c, (int)cmd, TRANSPARENT, &err);
    if (!mp) {
        freemsg(dp);
        ioc_slot_put(sd);
        return -err;
    }
    mp->b_cont = dp;
    err = ioc_run(sd, &c, mp, &ack);
    if (err)
        return -err;
    struct iocblk ioc;
    memcpy(&ioc, ack->b_rptr, sizeof(ioc));
    freemsg(ack);
    return ioc.ioc_rval < 0 ? -EINVAL : ioc.ioc_rval;
}
