/* SPDX-License-Identifier: MIT */
/*
 * sd_getmsg.c -- the message-whole readers of a stream head: getmsg(2)/
 * getpmsg(2), and I_PEEK, I_NREAD and FIONREAD.  read(2)/readv(2) and M_READ
 * are in sd_read.c; the helpers both share are in sd_readq.h.
 *
 * Principles of operation
 *   getmsg takes sd_lock once (ust_sd_lockq, as read does) and keeps it for
 *   the whole call; only a wait drops it.  It looks at the front message
 *   without taking it (sd_front) and takes it only when it satisfies the
 *   flags: MSG_HIPRI a high-priority message, MSG_BAND one of band >= the
 *   band asked for (a high-priority message satisfies it too, as in SVR4),
 *   MSG_ANY any.  A message holding several coalesced writes (sd_arrive.c)
 *   is cut first: only its first write is the message.  The control part
 *   goes to ctl, the data part to data, each as far as it is wanted
 *   (maxlen >= 0) and fits; what does not fit stays at the front as a
 *   message of the same type and band (MORECTL, MOREDATA), so getmsg never
 *   reorders and on EFAULT removes nothing.  Messages read to the end are
 *   freed after sd_lock is dropped.  At hang-up (or a FIFO without writer)
 *   getmsg returns 0 with both lengths 0; an M_PASSFP at the front fails it
 *   with EBADMSG; data held for SNDHOLD is sent before it looks for data.
 *   I_PEEK, I_NREAD and FIONREAD never block and take only the read queue's
 *   lock (sd_lock may or may not be held by their caller); each first moves
 *   a pipe's arrivals onto the queue, where they are messages like any
 *   other.  Of a message holding coalesced writes, I_PEEK copies and I_NREAD
 *   sizes the first write only (what getmsg would return), and I_NREAD
 *   counts each write as a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>

#include "sd_readq.h"
#include "sthead.h"

/* The message at the front of the head read queue (it stays there).  With
 * sd_lock held the front changes only by the holder's hand. */
static mblk_t *sd_front(queue_t *q)
{
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock); /* queue lock: q_first */
    mblk_t *mp = q->q_first;
    ust_unlock(&pv->lock);
    return mp;
}

/* Copy up to max bytes of the blocks from mp to end into the user buffer ubuf,
 * without changing the message.  Returns 0 or EFAULT. */
static int copy_part(const mblk_t *mp, const mblk_t *end, char *ubuf, size_t max)
{
    size_t off = 0;
    for (; mp && mp != end && off < max; mp = mp->b_cont) {
        size_t k = blen(mp);
        if (k > max - off)
            k = max - off;
        if (k && ust_copyout(mp->b_rptr, ubuf + off, k) != 0)
            return EFAULT;
        off += k;
    }
    return 0;
}

/* Advance b_rptr over n bytes of the blocks from mp on. */
static void skip_bytes(mblk_t *mp, size_t n)
{
    for (; mp && n > 0; mp = mp->b_cont) {
        size_t k = blen(mp);
        if (k > n)
            k = n;
        mp->b_rptr += k;
        n -= k;
    }
}

/* ------------------------------------------------------------------------ */
/* getmsg(2) / getpmsg(2)                                                   */
/* ------------------------------------------------------------------------ */

/* Does the front message mp satisfy getpmsg flags/band?  (A high-priority
 * message satisfies MSG_BAND too, as in SVR4.) */
static int gp_match(const mblk_t *mp, int flags, int band)
{
    if (!mp)
        return 0;
    int pc = mp->b_datap->db_type >= QPCTL;
    if (flags == MSG_HIPRI)
        return pc;
    if (flags == MSG_BAND)
        return pc || mp->b_band >= band;
    return 1;
}

/*
 * gp_extract -- take message mp (at the front) apart for getpmsg: copy the
 *   control part into ctl and the data part into data as far as they are
 *   wanted and fit, then remove what was copied; a remainder stays at the
 *   front as a message of the same type and band.  Returns MORECTL|MOREDATA
 *   bits, or -EFAULT (then nothing was removed).  sd_lock held (ust_sd_lockq).
 */
static int gp_extract(queue_t *q, mblk_t *mp, struct strbuf *ctl, struct strbuf *data,
                      mblk_t **dead)
{
    int hasctl = mp->b_datap->db_type != M_DATA;
    mblk_t *d = data_part(mp);
    size_t clen = hasctl ? chain_bytes(mp, d) : 0;
    size_t dlen = chain_bytes(d, NULL);
    int cwant = ctl && ctl->maxlen >= 0;
    int dwant = data && data->maxlen >= 0;
    size_t cn = 0, dn = 0;

    if (hasctl && cwant) {
        cn = clen < (size_t)ctl->maxlen ? clen : (size_t)ctl->maxlen;
        if (copy_part(mp, d, ctl->buf, cn) != 0)
            return -EFAULT;
    }
    if (d && dwant) {
        dn = dlen < (size_t)data->maxlen ? dlen : (size_t)data->maxlen;
        if (copy_part(d, NULL, data->buf, dn) != 0)
            return -EFAULT;
    }
    if (ctl)
        ctl->len = (hasctl && cwant) ? (int)cn : -1;
    if (data)
        data->len = (d && dwant) ? (int)dn : -1;

    int more = (clen > cn ? MORECTL : 0) | (dlen > dn ? MOREDATA : 0);
    rmvq(q, mp);
    if (!more) {
        dead_add(dead, mp);
        return 0;
    }
    /* Remove what was copied.  Control blocks stay (emptied or not) so the
     * remainder keeps its type; a data part read to the end goes. */
    if (hasctl)
        skip_bytes(mp, cn);
    if (d && dlen == dn && hasctl) {
        mblk_t *c = mp;
        while (c->b_cont != d)
            c = c->b_cont;
        c->b_cont = NULL;
        dead_add(dead, d);
    } else if (d) {
        skip_bytes(d, dn);
    }
    put_back(q, mp);
    return more;
}

/*
 * ust_sd_getpmsg -- getpmsg(2) on a stream.
 *   Context: a system call; may block.  No lock held on entry.  ctl and data
 *   are kernel copies (NULL: part not wanted); their buf members are user
 *   addresses.  *flagsp is MSG_HIPRI, MSG_ANY or MSG_BAND (band *bandp).
 *   Returns 0 or MORECTL|MOREDATA, with the lengths, *flagsp (MSG_HIPRI or
 *   MSG_BAND) and *bandp set; at hang-up 0 with both lengths 0.  Errors
 *   (-errno): EINVAL (flags, band, STPLEX), EBADF (closing), EAGAIN, EINTR,
 *   EBADMSG (M_PASSFP at the front), EFAULT (nothing removed), the read error.
 */
int ust_sd_getpmsg(struct stdata *sd, struct strbuf *ctl, struct strbuf *data, int *bandp,
                   int *flagsp)
{
    int flags = *flagsp;
    int band = bandp ? *bandp : 0;
    switch (flags) {
    case MSG_HIPRI:
        if (band != 0)
            return -EINVAL;
        break;
    case MSG_ANY:
        band = 0;
        break;
    case MSG_BAND:
        if (band < 0 || band > UST_MAXBAND)
            return -EINVAL;
        break;
    default:
        return -EINVAL;
    }

    queue_t *q = sd->sd_rq;
    mblk_t *dead = NULL, *mp;
    int err = 0, more = 0, hup = 0;
    ust_sd_flush_hold(sd); /* a reader may wait for the answer to held data */

    ust_sd_lockq(sd); /* sd_lock: the whole call (dropped only to wait) */
    for (;;) {
        err = sd_read_error(sd, 1);
        if (err)
            goto out;
        unsigned rseq = ust_sd_wait_seq(&sd->sd_rwait); /* before the test: see ust_sd_read */
        mp = sd_front(q);
        if (gp_match(mp, flags, band)) {
            if (mp->b_tag != UST_TAG_COAL)
                break;
            rmvq(q, mp); /* several writes: the first is the message */
            int e = first_write(q, mp);
            put_back(q, mp);
            if (e == 0)
                continue;
            if (sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) {
                err = EAGAIN;
                goto out;
            }
            if ((err = ust_sd_wait_mem(sd)) != 0)
                goto out;
            continue;
        }
        if (ust_sd_absorb_some(sd)) /* a pipe's arrivals (sd_arrive.c) */
            continue;
        if ((sd->sd_flag & STRHUP) || ust_fifo_eof(sd)) { /* a FIFO without writer too */
            hup = 1;
            goto out;
        }
        if (sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) {
            err = EAGAIN;
            ust_sd_rready(sd);
            goto out;
        }
        ust_sd_rready_dry(sd);
        if (ust_sd_settle(sd))
            continue;
        int unwoken;
        err = ust_sd_wait_data(sd, rseq, &unwoken);
        if (err)
            goto out;
    }
    if (mp->b_datap->db_type == M_PASSFP) {
        err = EBADMSG;
        goto out;
    }
    int pc = mp->b_datap->db_type >= QPCTL;
    int outband = pc ? 0 : mp->b_band;
    more = gp_extract(q, mp, ctl, data, &dead);
    if (more < 0) {
        err = -more;
        goto out;
    }
    *flagsp = pc ? MSG_HIPRI : MSG_BAND;
    if (bandp)
        *bandp = outband;
    ust_sd_rready_after_read(sd);
out:
    if (err == EFAULT)
        ust_sd_rready(sd); /* the message stays: a pull may have left it without its token */
    ust_sd_unlockq(sd);
    dead_free(sd, dead);
    if (err)
        return -err;
    if (hup) { /* SVR4: at hang-up getmsg returns 0 with both lengths 0 */
        if (ctl)
            ctl->len = 0;
        if (data)
            data->len = 0;
        *flagsp = 0;
        if (bandp)
            *bandp = 0;
    }
    return more;
}

/* ------------------------------------------------------------------------ */
/* I_PEEK, I_NREAD                                                          */
/* ------------------------------------------------------------------------ */

/*
 * ust_sd_peek_msg -- I_PEEK: copy the front message (a high-priority one
 *   only, with RS_HIPRI) without removing it.
 *   Context: never blocks; takes only the read queue's lock (sd_lock may or
 *   may not be held by the caller).  pk is a kernel copy, its bufs user
 *   addresses; maxlen <= 0 copies nothing.
 *   Returns 1 (pk lengths and flags set; len -1 for an absent part), 0 (no
 *   such message), -EINVAL (flags other than 0/RS_HIPRI), -EBADMSG (M_PASSFP
 *   at the front), -EFAULT.
 */
int ust_sd_peek_msg(struct stdata *sd, struct strpeek *pk)
{
    if (pk->flags & ~(long)RS_HIPRI)
        return -EINVAL;
    queue_t *q = sd->sd_rq;
    struct ust_qpriv *pv = ust_qpv(q);
    int r = 1;

    ust_sd_absorb(sd); /* a pipe's arrivals are messages at the head too */
    ust_lock(&pv->lock); /* queue lock: the front message stays put while copied */
    mblk_t *mp = q->q_first;
    int pc = mp && mp->b_datap->db_type >= QPCTL;
    if (!mp || ((pk->flags & RS_HIPRI) && !pc)) {
        r = 0;
    } else if (mp->b_datap->db_type == M_PASSFP) {
        r = -EBADMSG;
    } else {
        int hasctl = mp->b_datap->db_type != M_DATA;
        mblk_t *d = data_part(mp);
        size_t cmax = pk->ctlbuf.maxlen > 0 ? (size_t)pk->ctlbuf.maxlen : 0;
        size_t dmax = pk->databuf.maxlen > 0 ? (size_t)pk->databuf.maxlen : 0;
        size_t clen = hasctl ? chain_bytes(mp, d) : 0;
        size_t dlen = mp->b_tag == UST_TAG_COAL ? ust_sd_msg_first_len(mp) : chain_bytes(d, NULL);
        size_t cn = clen < cmax ? clen : cmax;
        size_t dn = dlen < dmax ? dlen : dmax;
        if ((hasctl && copy_part(mp, d, pk->ctlbuf.buf, cn) != 0) ||
            (d && copy_part(d, NULL, pk->databuf.buf, dn) != 0)) {
            r = -EFAULT;
        } else {
            pk->ctlbuf.len = hasctl ? (int)cn : -1;
            pk->databuf.len = d ? (int)dn : -1;
            pk->flags = pc ? RS_HIPRI : 0;
        }
    }
    ust_unlock(&pv->lock);
    return r;
}

/*
 * ust_sd_fionread -- FIONREAD: the M_DATA bytes of every message at the
 *   head (msgdsize of each, as Solaris' stream head counts them: control
 *   parts are not data), a pipe's arrivals included.  Takes only the read
 *   queue's lock; never blocks.
 */
size_t ust_sd_fionread(struct stdata *sd)
{
    queue_t *q = sd->sd_rq;
    struct ust_qpriv *pv = ust_qpv(q);
    size_t n = 0;
    ust_sd_absorb(sd);
    ust_lock(&pv->lock); /* queue lock: the list */
    for (mblk_t *m = q->q_first; m; m = m->b_next)
        n += msgdsize(m);
    ust_unlock(&pv->lock);
    return n;
}

/*
 * ust_sd_nread -- I_NREAD: the number of messages at the head; *bytes (if
 *   not NULL) the M_DATA bytes of the first.  Takes only the read queue's
 *   lock; never blocks.
 */
int ust_sd_nread(struct stdata *sd, int *bytes)
{
    queue_t *q = sd->sd_rq;
    struct ust_qpriv *pv = ust_qpv(q);
    int n = 0;
    ust_sd_absorb(sd); /* a pipe's arrivals are messages at the head too */
    ust_lock(&pv->lock); /* queue lock: the list */
    size_t first = q->q_first ? ust_sd_msg_first_len(q->q_first) : 0;
    for (mblk_t *m = q->q_first; m; m = m->b_next)
        n += ust_sd_msg_writes(m);
    ust_unlock(&pv->lock);
    if (bytes)
        *bytes = first > INT_MAX ? INT_MAX : (int)first;
    return n;
}
